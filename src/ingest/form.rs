//! `application/x-www-form-urlencoded` pairs, decoded lazily: a key or value
//! borrows from the input unless it holds `%` or `+`, and the OsmAnd parser
//! decodes values only for the keys it knows.

use std::borrow::Cow;

/// The raw `key=value` pairs of a query string or form body, empty pieces
/// (`a=1&&b=2`) skipped; a piece without `=` has an empty value.
pub(crate) fn raw_pairs(input: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    input
        .split(|&b| b == b'&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| match piece.iter().position(|&b| b == b'=') {
            Some(at) => (&piece[..at], &piece[at + 1..]),
            None => (piece, &piece[piece.len()..]),
        })
}

/// Percent-decodes one key or value; `+` is a space. A `%` not followed by
/// two hex digits stays as it is, and invalid UTF-8 becomes U+FFFD, as
/// browsers and the `form_urlencoded` crate do.
pub(crate) fn decode(raw: &[u8]) -> Cow<'_, str> {
    if !raw.iter().any(|&b| b == b'%' || b == b'+') {
        return String::from_utf8_lossy(raw);
    }
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => bytes.push(b' '),
            b'%' => match (
                raw.get(i + 1).and_then(|&b| hex(b)),
                raw.get(i + 2).and_then(|&b| hex(b)),
            ) {
                (Some(high), Some(low)) => {
                    bytes.push(high << 4 | low);
                    i += 2;
                }
                _ => bytes.push(b'%'),
            },
            b => bytes.push(b),
        }
        i += 1;
    }
    match String::from_utf8(bytes) {
        Ok(text) => Cow::Owned(text),
        Err(err) => Cow::Owned(String::from_utf8_lossy(err.as_bytes()).into_owned()),
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(input: &str) -> Vec<(String, String)> {
        raw_pairs(input.as_bytes())
            .map(|(k, v)| (decode(k).into_owned(), decode(v).into_owned()))
            .collect()
    }

    #[test]
    fn splits_pairs_and_skips_empty_pieces() {
        assert_eq!(
            pairs("id=abc&&lat=1.5&flag&x=a=b"),
            [
                ("id".into(), "abc".into()),
                ("lat".into(), "1.5".into()),
                ("flag".into(), String::new()),
                ("x".into(), "a=b".into()),
            ]
        );
        assert!(pairs("").is_empty());
    }

    #[test]
    fn plain_values_are_borrowed() {
        assert!(matches!(decode(b"32.77"), Cow::Borrowed("32.77")));
    }

    #[test]
    fn percent_and_plus_are_decoded() {
        assert_eq!(
            decode(b"2024-11-27T06%3A46%3A40%2B02%3A00"),
            "2024-11-27T06:46:40+02:00"
        );
        assert_eq!(decode(b"2024-11-27+06:46:40"), "2024-11-27 06:46:40");
        assert_eq!(decode(b"caf%C3%A9"), "café");
        assert_eq!(decode(b"%2d96.79"), "-96.79");
    }

    #[test]
    fn broken_escapes_stay_literal() {
        assert_eq!(decode(b"100%"), "100%");
        assert_eq!(decode(b"%zz1"), "%zz1");
        assert_eq!(decode(b"%4"), "%4");
        assert_eq!(decode(b"%FF"), "\u{FFFD}");
    }
}
