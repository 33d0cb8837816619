//! Request extractors that refuse bad input in the error envelope, naming the field.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::{StatusCode, header};
use actix_web::{FromRequest, HttpRequest, web};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::body::read_capped;
pub use super::body::{buffer_body, declared_length};
use super::error::ApiError;
use crate::domain::validation::ValidationErrors;
use crate::storage::PageRequest;

/// Default cap on a JSON request body.
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;
/// Body cap of the GPS bulk endpoint, the largest any route allows: 1,000
/// points with room for long timestamps.
pub const BATCH_BODY_LIMIT: usize = 1024 * 1024;
pub const DEFAULT_PAGE_LIMIT: u32 = 50;
pub const MAX_PAGE_LIMIT: u32 = 100;
/// Deep offsets cost a scan; a million pages is beyond any real client.
pub const MAX_PAGE: u64 = 1_000_000;

/// The body size cap in force, set as app data.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// The raw bytes of a JSON body: the content type checked and the size capped
/// (by the [`BodyLimit`] of the resource, else of the app).
pub struct JsonBytes(pub web::Bytes);

impl FromRequest for JsonBytes {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = req
            .app_data::<web::Data<BodyLimit>>()
            .map_or(DEFAULT_BODY_LIMIT, |l| l.0);
        let content_type_ok = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .is_some_and(|mime| mime == "application/json" || mime.ends_with("+json"));
        let declared_len = declared_length(req.headers());
        let mut payload = payload.take();
        Box::pin(async move {
            if !content_type_ok {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "UNSUPPORTED_MEDIA_TYPE",
                    "send the body as JSON with 'Content-Type: application/json'",
                ));
            }
            read_capped(&mut payload, declared_len, limit)
                .await
                .map(JsonBytes)
        })
    }
}

/// A JSON body deserialised into `T`; a refusal names the offending field.
pub struct JsonBody<T>(pub T);

/// A request body type, and what its own checks find: when serde refuses part
/// of a body (an unknown field, a string where a number goes), the refusal
/// lists those problems and then what the type's validation finds in the rest,
/// so that every problem is reported at once (see [`parse_json`]).
pub trait BodyInput: DeserializeOwned {
    /// Every problem the type's own validation finds; none by default.
    fn problems(self) -> ValidationErrors {
        ValidationErrors::new()
    }
}

impl<T: BodyInput + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = JsonBytes::from_request(req, payload);
        Box::pin(async move {
            let JsonBytes(body) = bytes.await?;
            parse_json(&body).map(JsonBody)
        })
    }
}

/// A JSON body that may be left out, for operations whose every field is
/// optional: a request that sends no body at all (`Content-Length: 0`, or
/// neither it nor `Transfer-Encoding`) reads as `{}`; one that sends a body
/// is read as [`JsonBody`] reads it, content type and all.
pub struct OptionalJsonBody<T>(pub T);

impl<T: BodyInput + 'static> FromRequest for OptionalJsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let headers = req.headers();
        let no_body = match declared_length(headers) {
            Some(length) => length == 0,
            None => {
                !headers.contains_key(header::CONTENT_LENGTH)
                    && !headers.contains_key(header::TRANSFER_ENCODING)
            }
        };
        if no_body {
            return Box::pin(std::future::ready(parse_json(b"{}").map(OptionalJsonBody)));
        }
        let body = JsonBody::<T>::from_request(req, payload);
        Box::pin(async move { body.await.map(|JsonBody(value)| OptionalJsonBody(value)) })
    }
}

/// Deserialises JSON, telling syntax errors apart from wrong fields; a body
/// with wrong fields is refused with every problem it has (see
/// [`every_problem`]).
pub fn parse_json<T: BodyInput>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "MALFORMED_JSON",
            "the request body is empty; send a JSON object",
        ));
    }
    // serde takes an array for a struct (its fields in order): `[]` would read
    // as a body that sends nothing. Every body here is an object.
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(ValidationErrors::single("body", "must be a JSON object, not an array").into());
    }
    // Valid bodies, nearly all of them, are parsed once without tracking the
    // path (which costs as much again); only a refused one is parsed a second
    // time, to say where it went wrong.
    if let Ok(value) = serde_json::from_slice::<T>(body) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let data = e.inner().classify() == serde_json::error::Category::Data;
        let first = json_error(&path, e.into_inner());
        // Valid JSON with wrong fields: list them all, not only the first.
        match data {
            true => every_problem::<T>(body).map_or(first, ApiError::from),
            false => first,
        }
    })?;
    de.end().map_err(|e| json_error(".", e))?;
    Ok(value)
}

/// At most this many fields are taken out of a refused body to find the next
/// problem (each is one more parse of what is left).
const MAX_REMOVED_FIELDS: usize = 32;

/// Every problem of a body that is valid JSON but that serde refuses as `T`:
/// each refused field is noted and taken out, until what is left parses; then
/// what `T`'s validation finds in that is added (a field already noted is not
/// noted twice). `None` when the body cannot be walked that way (its top level
/// is not an object, or an array element is refused whole): the first problem
/// alone is reported then.
fn every_problem<T: BodyInput>(body: &[u8]) -> Option<ValidationErrors> {
    let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut errors = ValidationErrors::new();
    for _ in 0..MAX_REMOVED_FIELDS {
        match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(rest) => {
                let refused_fields = !errors.is_empty();
                for problem in rest.problems().errors() {
                    let noted = errors.errors().iter().any(|e| e.field == problem.field);
                    // A complaint about the body as a whole ("must name at least
                    // one …") is about what is left once the refused fields are
                    // taken out: the client did name them, wrongly.
                    let about_the_rest = refused_fields && problem.field == "body";
                    if !noted && !about_the_rest {
                        errors.add(problem.field.clone(), problem.message.clone());
                    }
                }
                // Nothing found this way (a field named twice, which a
                // `Value` keeps once): the first problem is the one to report.
                return (!errors.is_empty()).then_some(errors);
            }
            Err(refused) => {
                let path = refused.path().clone();
                errors.add(
                    path.to_string(),
                    plain_words(&refused.into_inner().to_string()),
                );
                if !take_out(&mut value, &path) {
                    return (errors.errors().len() > 1).then_some(errors);
                }
            }
        }
    }
    Some(errors)
}

/// Removes the field at `path` from `value`; false if `path` does not end in
/// an object's field (removing an array element would renumber the others).
fn take_out(value: &mut serde_json::Value, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let Some((Segment::Map { key }, parents)) = segments.split_last() else {
        return false;
    };
    let mut node = value;
    for segment in parents {
        node = match (segment, node) {
            (Segment::Map { key }, serde_json::Value::Object(map)) => match map.get_mut(key) {
                Some(inner) => inner,
                None => return false,
            },
            (Segment::Seq { index }, serde_json::Value::Array(items)) => {
                match items.get_mut(*index) {
                    Some(inner) => inner,
                    None => return false,
                }
            }
            _ => return false,
        };
    }
    match node {
        serde_json::Value::Object(map) => map.remove(key).is_some(),
        _ => false,
    }
}

/// serde's words for a refused field, in the API's: `invalid type: string
/// "42000", expected f64` becomes `must be a number`.
fn plain_words(serde_message: &str) -> String {
    let message = serde_message
        .split(" at line ")
        .next()
        .unwrap_or(serde_message);
    if message.starts_with("unknown field") {
        return "is not a field of this request".to_owned();
    }
    if message.starts_with("number out of range") {
        return "is a number out of range".to_owned();
    }
    if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        && let Some((_, expected)) = rest.rsplit_once(", expected ")
    {
        let kind = match expected {
            "f64" | "f32" | "a number" => "a number",
            "u8" | "u16" | "u32" | "u64" | "i8" | "i16" | "i32" | "i64" | "usize"
            | "an integer" => "a whole number",
            "a string" => "a string",
            "a boolean" | "bool" => "true or false",
            "a sequence" => "an array",
            map if map.starts_with("struct ") || map.starts_with("a map") => "an object",
            other => other,
        };
        return format!("must be {kind}");
    }
    message.to_owned()
}

fn json_error(path: &str, error: serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    let raw = error.to_string();
    // serde_json reports 1e400 as a syntax error; to a client it is an out-of-range field.
    let out_of_range = raw.starts_with("number out of range");
    match error.classify() {
        Category::Syntax if out_of_range && path != "." => {
            ValidationErrors::single(path, "is a number out of range").into()
        }
        Category::Syntax | Category::Eof | Category::Io => ApiError::new(
            StatusCode::BAD_REQUEST,
            "MALFORMED_JSON",
            format!("the request body is not valid JSON: {error}"),
        )
        .with_details(json!({"line": error.line(), "column": error.column()})),
        Category::Data => {
            // The path already ends in the offending field, unknown ones included.
            let field = if path == "." {
                "body".to_owned()
            } else {
                path.to_owned()
            };
            ValidationErrors::single(field, plain_words(&raw)).into()
        }
    }
}

/// More query parameters than any endpoint has is refused before looking at them.
const MAX_QUERY_PARAMS: usize = 16;

/// Query parameters: each known name taken once, anything left over refused, so a
/// typo such as `?staus=posted` is an error rather than a silently unfiltered list.
pub struct QueryParams {
    pairs: Vec<(String, String)>,
    errors: ValidationErrors,
}

impl QueryParams {
    pub fn parse(req: &HttpRequest) -> Result<Self, ApiError> {
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(req.query_string()).map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "INVALID_QUERY_PARAMETER",
                    "the query string is not valid URL encoding",
                )
            })?;
        if pairs.len() > MAX_QUERY_PARAMS {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_QUERY_PARAMETER",
                format!("at most {MAX_QUERY_PARAMS} query parameters are accepted"),
            ));
        }
        let mut errors = ValidationErrors::new();
        let mut seen = std::collections::HashSet::new();
        for (name, _) in &pairs {
            if !seen.insert(name.as_str()) {
                errors.add(name.clone(), "is given more than once");
            }
        }
        Ok(Self { pairs, errors })
    }

    /// The value of `name`, parsed; a parse failure is recorded against `name`.
    pub fn take<T>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        let position = self.pairs.iter().position(|(n, _)| n == name)?;
        let (_, raw) = self.pairs.remove(position);
        self.pairs.retain(|(n, _)| n != name);
        self.errors.check(name, parse(&raw))
    }

    /// `page` and `limit`, with the spec's default and maximum.
    pub fn pagination(&mut self) -> (u64, u32) {
        let page = self
            .take("page", |raw| whole_number(raw, 1, MAX_PAGE))
            .unwrap_or(1);
        let limit = self
            .take("limit", |raw| {
                whole_number(raw, 1, u64::from(MAX_PAGE_LIMIT))
            })
            .map_or(DEFAULT_PAGE_LIMIT, |l| l as u32);
        (page, limit)
    }

    /// Refuses unknown or invalid parameters, all of them named at once.
    pub fn finish(self) -> Result<(), ApiError> {
        self.finish_allowing(&[])
    }

    /// Like [`finish`](Self::finish); an unknown parameter's error lists
    /// `allowed`, the endpoint's parameters, and so does `details.allowed`.
    pub fn finish_allowing(mut self, allowed: &[&str]) -> Result<(), ApiError> {
        let unknown = match allowed {
            [] => "is not a query parameter of this endpoint".to_owned(),
            _ => format!(
                "is not a query parameter of this endpoint (it takes: {})",
                allowed.join(", ")
            ),
        };
        for (name, _) in std::mem::take(&mut self.pairs) {
            self.errors.add(name, unknown.clone());
        }
        if self.errors.is_empty() {
            return Ok(());
        }
        let first = self.errors.errors()[0].field.clone();
        let mut details = json!({"field": first, "errors": self.errors.errors()});
        if !allowed.is_empty() {
            details["allowed"] = json!(allowed);
        }
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_QUERY_PARAMETER",
            format!("invalid query parameters: {}", self.errors),
        )
        .with_details(details))
    }
}

/// A query parameter that must be a whole number in `min..=max`.
pub fn whole_number(raw: &str, min: u64, max: u64) -> Result<u64, String> {
    match raw.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("must be a whole number from {min} to {max}")),
    }
}

pub fn page_request(page: u64, limit: u32) -> PageRequest {
    PageRequest {
        offset: (page - 1) * u64::from(limit),
        limit,
    }
}

/// For endpoints that take no query parameters: any parameter is refused, as on the
/// list endpoints, rather than silently ignored.
pub struct NoQuery;

impl FromRequest for NoQuery {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(
            QueryParams::parse(req)
                .and_then(QueryParams::finish)
                .map(|()| NoQuery),
        )
    }
}

/// `page` and `limit` of a list endpoint that takes no other parameter; anything
/// else in the query string is refused.
#[derive(Debug, Clone, Copy)]
pub struct Paging {
    pub page: u64,
    pub limit: u32,
}

impl Paging {
    pub fn request(&self) -> PageRequest {
        page_request(self.page, self.limit)
    }

    pub fn info(&self, total: u64) -> crate::api::envelope::PageInfo {
        crate::api::envelope::PageInfo {
            page: self.page,
            limit: self.limit,
            total,
        }
    }
}

impl FromRequest for Paging {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(QueryParams::parse(req).and_then(|mut query| {
            let (page, limit) = query.pagination();
            query.finish().map(|()| Paging { page, limit })
        }))
    }
}
