//! Collects every problem with a request so a client can fix them all at once.

use std::fmt;

/// One refused field: a dotted path as the client wrote it (`origin.state`,
/// `equipment_types[2]`) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// All problems found in one request; empty means valid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationErrors {
    errors: Vec<FieldError>,
}

impl ValidationErrors {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn single(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, message);
        errors
    }

    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError {
            field: field.into(),
            message: message.into(),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn errors(&self) -> &[FieldError] {
        &self.errors
    }

    /// `Ok(value)` when nothing was refused, so a parser can end in `errors.finish(value)`.
    pub fn finish<T>(self, value: impl FnOnce() -> T) -> Result<T, Self> {
        if self.errors.is_empty() {
            Ok(value())
        } else {
            Err(self)
        }
    }

    /// Records the error of a field parser under `field` and returns the parsed value.
    /// `field` is written out only if there is an error to record.
    pub fn check<T>(&mut self, field: impl fmt::Display, result: Result<T, String>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(message) => {
                self.add(field.to_string(), message);
                None
            }
        }
    }

    /// Like [`check`](Self::check), for a field the client must send.
    pub fn require<T, R>(
        &mut self,
        field: impl fmt::Display,
        raw: Option<R>,
        parse: impl FnOnce(R) -> Result<T, String>,
    ) -> Option<T> {
        match raw {
            Some(raw) => self.check(field, parse(raw)),
            None => {
                self.add(field.to_string(), "is required");
                None
            }
        }
    }

    /// Like [`check`](Self::check), for a field the client may leave out.
    pub fn optional<T, R>(
        &mut self,
        field: impl fmt::Display,
        raw: Option<R>,
        parse: impl FnOnce(R) -> Result<T, String>,
    ) -> Option<T> {
        raw.and_then(|raw| self.check(field, parse(raw)))
    }
}

/// A field's path under a prefix (`points[3].lat`), written out only when an
/// error names it: valid input, the usual case, costs no allocation.
#[derive(Clone, Copy)]
pub struct FieldPath<'a>(pub &'a str, pub &'a str);

impl fmt::Display for FieldPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)?;
        f.write_str(self.1)
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .errors
            .iter()
            .map(|e| format!("{} {}", e.field, e.message))
            .collect();
        f.write_str(&parts.join("; "))
    }
}

/// Trims a free-text field and enforces its bounds (in characters, not bytes).
pub fn text(raw: String, max_chars: usize, allow_empty: bool) -> Result<String, String> {
    let trimmed = raw.trim();
    if !allow_empty && trimmed.is_empty() {
        return Err("must not be empty".into());
    }
    if trimmed.chars().count() > max_chars {
        return Err(format!("must be at most {max_chars} characters"));
    }
    if trimmed
        .chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_invisible_format(c))
    {
        return Err("must not contain control or invisible formatting characters".into());
    }
    Ok(trimmed.to_owned())
}

/// Characters that make text look empty, or read differently from what is
/// stored: format characters (zero-width, bidirectional overrides, tags), line
/// and paragraph separators, and the letters that render as nothing (Hangul
/// fillers, the combining grapheme joiner, Khmer inherent vowels, Mongolian
/// variation selectors, the braille blank).
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{2800}' | '\u{3164}'
        | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}')
}

/// A whole number of minutes from 0 to `max`, sent as a JSON number.
pub fn whole_minutes(value: f64, max: u32) -> Result<u32, String> {
    if value.fract() != 0.0 || !(0.0..=f64::from(max)).contains(&value) {
        return Err(format!("must be a whole number of minutes from 0 to {max}"));
    }
    Ok(value as u32)
}

/// A finite number within `[min, max]`.
pub fn number_in(value: f64, min: f64, max: f64) -> Result<f64, String> {
    if !value.is_finite() || value < min || value > max {
        return Err(format!("must be a number from {min} to {max}"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_refused_inside_text() {
        for invisible in [
            '\u{200B}',
            '\u{202E}',
            '\u{2028}',
            '\u{2029}',
            '\u{E0001}',
            '\u{E0041}',
            '\u{E007F}',
            '\u{115F}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{034F}',
            '\u{2800}',
            '\u{180E}',
        ] {
            let raw = format!("Dal{invisible}las");
            assert!(text(raw, 100, false).is_err(), "U+{:04X}", invisible as u32);
            // Alone, it must not pass for a non-empty name either.
            assert!(
                text(invisible.to_string(), 100, false).is_err(),
                "U+{:04X}",
                invisible as u32
            );
        }
        for fine in [
            "Dallas",
            "São Paulo",
            "Köln",
            "東京",
            "서울",
            "line\nbreak",
            "a\ttab",
            "👍🏽",
        ] {
            assert_eq!(text(fine.to_string(), 100, false).unwrap(), fine);
        }
    }
}
