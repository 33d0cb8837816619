//! The operator's tile source for the dashboard's maps (`--map-tiles`,
//! `--map-attribution`). Without one the board and the load pages draw the
//! vendored outline of the states, which needs nothing from the network; with
//! one they draw Leaflet over those tiles, and the pages' Content-Security-Policy
//! lets images come from the tile server's origin (and nothing else from it).

use std::fmt;

/// The map the board and the load pages draw: the operator's tiles, or the
/// vendored outline when there are none. Handed to the pages as app data.
#[derive(Debug, Clone, Default)]
pub struct MapSource(pub Option<MapTiles>);

impl MapSource {
    pub fn tiles(&self) -> Option<&MapTiles> {
        self.0.as_ref()
    }
}

/// A validated tile URL template and the attribution its licence requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapTiles {
    /// As given: `https://tile.example.org/{z}/{x}/{y}.png`, `{s}` allowed in
    /// the host for Leaflet's subdomains (a, b, c), `{r}` for retina tiles.
    pub template: String,
    /// Shown on the map; HTML, as Leaflet takes it (the operator's own text,
    /// e.g. `&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors`).
    pub attribution: String,
    /// What `img-src` must allow: `https://host[:port]`, `*.` in place of `{s}.`.
    pub origin: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidMapTiles(String);

impl fmt::Display for InvalidMapTiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidMapTiles {}

fn invalid(why: impl Into<String>) -> InvalidMapTiles {
    InvalidMapTiles(format!("--map-tiles: {}", why.into()))
}

impl MapTiles {
    pub fn parse(template: &str, attribution: &str) -> Result<MapTiles, InvalidMapTiles> {
        let template = template.trim();
        // The dashboard is served over HTTPS: browsers upgrade or block plain
        // http:// images on it, so such a source would draw nothing.
        let rest = template.strip_prefix("https://").ok_or_else(|| {
            invalid("must start with https:// (the dashboard is HTTPS; browsers block plain-http tiles on it)")
        })?;
        for placeholder in ["{z}", "{x}", "{y}"] {
            if !template.contains(placeholder) {
                return Err(invalid(format!(
                    "must contain {{z}}, {{x}} and {{y}} (e.g. https://tile.example.org/{{z}}/{{x}}/{{y}}.png); {placeholder} is missing"
                )));
            }
        }
        let host = rest.split('/').next().unwrap_or_default();
        let wildcard_host = host.replacen("{s}.", "*.", 1);
        let allowed =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
        let literal = wildcard_host.strip_prefix("*.").unwrap_or(&wildcard_host);
        if literal.is_empty() || !literal.chars().all(allowed) {
            return Err(invalid(format!(
                "the host {host:?} must be a name or address (only {{s}}. may stand for a subdomain)"
            )));
        }
        if template
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(invalid("must not contain spaces"));
        }
        let attribution = attribution.trim();
        if attribution.is_empty() {
            return Err(InvalidMapTiles(
                "--map-attribution: tile sources require their attribution on the map \
                 (e.g. \"&copy; OpenStreetMap contributors\")"
                    .into(),
            ));
        }
        Ok(MapTiles {
            template: template.to_owned(),
            attribution: attribution.to_owned(),
            origin: format!("https://{wildcard_host}"),
        })
    }
}

/// The dashboard's Content-Security-Policy with `tiles`' origin allowed for
/// images: scripts, styles and connections still come from this origin only.
pub fn content_security_policy(tiles: Option<&MapTiles>) -> String {
    let images = match tiles {
        Some(tiles) => format!("'self' data: {}", tiles.origin),
        None => "'self' data:".to_owned(),
    };
    format!(
        "default-src 'self'; img-src {images}; style-src 'self'; script-src 'self'; \
         connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const OSM: &str = "&copy; OpenStreetMap contributors";

    #[test]
    fn a_template_gives_the_origin_images_may_come_from() {
        let tiles = MapTiles::parse("https://tile.openstreetmap.org/{z}/{x}/{y}.png", OSM).unwrap();
        assert_eq!(tiles.origin, "https://tile.openstreetmap.org");
        let tiles =
            MapTiles::parse("https://{s}.tiles.example.com:8443/{z}/{x}/{y}{r}.png", OSM).unwrap();
        assert_eq!(tiles.origin, "https://*.tiles.example.com:8443");
        let csp = content_security_policy(Some(&tiles));
        assert!(
            csp.contains("img-src 'self' data: https://*.tiles.example.com:8443;"),
            "{csp}"
        );
        assert!(csp.contains("script-src 'self';"), "{csp}");
    }

    #[test]
    fn without_tiles_images_come_from_this_origin_only() {
        assert!(content_security_policy(None).contains("img-src 'self' data:;"));
        // The pages' own header, which the scope replaces only with tiles.
        assert_eq!(content_security_policy(None), crate::dashboard::page::CSP);
    }

    #[test]
    fn templates_that_could_not_draw_are_refused_with_the_reason() {
        let refused = |template: &str| MapTiles::parse(template, OSM).unwrap_err().to_string();
        assert!(refused("http://tile.example.org/{z}/{x}/{y}.png").contains("https://"));
        assert!(refused("https://tile.example.org/{z}/{x}.png").contains("{y} is missing"));
        assert!(refused("https://{z}.example.org/{z}/{x}/{y}.png").contains("host"));
        assert!(refused("https:///{z}/{x}/{y}.png").contains("host"));
        assert!(refused("https://a b/{z}/{x}/{y}.png").contains("host"));
        assert!(refused("https://tile.example.org/{z}/{x}/{y}.png?k=a b").contains("spaces"));
        let no_attribution =
            MapTiles::parse("https://tile.example.org/{z}/{x}/{y}.png", "  ").unwrap_err();
        assert!(no_attribution.to_string().starts_with("--map-attribution"));
    }
}
