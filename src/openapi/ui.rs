//! The interactive API reference page: vendored Swagger UI (see
//! `swagger-ui/README.md`) compiled into the binary, so it works offline.

/// Version of the vendored Swagger UI.
pub const SWAGGER_UI_VERSION: &str = "5.30.0";

pub const BUNDLE_JS: &[u8] = include_bytes!("swagger-ui/swagger-ui-bundle.js");
pub const CSS: &[u8] = include_bytes!("swagger-ui/swagger-ui.css");

/// The page. No inline script, so the page can be served with a strict CSP.
pub const INDEX_HTML: &str = r#"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>freight API reference</title>
  <link rel="stylesheet" href="/v1/docs/swagger-ui.css">
</head>
<body>
  <noscript>This page needs JavaScript. The API is described by <a href="/v1/openapi.json">/v1/openapi.json</a>.</noscript>
  <div id="swagger-ui"></div>
  <script src="/v1/docs/swagger-ui-bundle.js"></script>
  <script src="/v1/docs/swagger-initializer.js"></script>
</body>
</html>
"#;

/// Points Swagger UI at the document. `validatorUrl: null` keeps it from sending
/// the document to swagger.io's online validator.
pub const INITIALIZER_JS: &str = r##"window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
"##;

/// Content-Security-Policy of the page: everything from this origin only
/// (Swagger UI sets inline styles and uses `data:` images).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; \
     style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
