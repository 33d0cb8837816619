//! Any instance serves any request: a request for a load another instance
//! acts for (holds its lease) runs there. The request runs here first; if
//! the load's actor answers that another instance holds the lease (a
//! [`LeaseHolder`] on the answer), the same request goes to that instance
//! and its answer is the answer (`server::cluster` sends it). Nothing was
//! changed here: an actor that does not hold the lease refuses before it
//! reads or writes anything.

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use bytes::Bytes;

use super::error::{ApiError, LeaseHolder};
use super::extract::buffer_body;
use crate::unavailable::Unavailable;

/// Names the instance a request was forwarded from (logs; never trusted).
pub const FORWARDED_BY: &str = "x-freight-forwarded-by";

/// Sends a request to the instance acting for its load (app data of the
/// public listener, with a store several instances share).
// Not `Send`: it runs on the worker that took the request.
#[async_trait::async_trait(?Send)]
pub trait ForwardRequests: Send + Sync {
    /// Sends `req` (its head, and `body` as read) to `holder` and gives back
    /// that instance's answer unchanged; unavailable if it cannot be reached.
    async fn forward_request(
        &self,
        holder: &std::sync::Arc<str>,
        req: &HttpRequest,
        body: Bytes,
    ) -> Result<HttpResponse, Unavailable>;
}

/// App data of the internal listener (requests other instances forwarded):
/// they are not forwarded again, counted against quotas, nor matched to
/// idempotency keys; the instance they came from did that.
pub struct InternalListener;

/// On a forwarded request, the client's address as the first instance saw
/// it, and the origin the client reached (both signed: `server::cluster::signing`).
pub const CLIENT_HEADER: &str = "x-freight-cluster-client";
pub const ORIGIN_HEADER: &str = "x-freight-cluster-origin";

/// What a request that came in on the internal listener says of its client:
/// the signed `header`, never its forwarding headers.
pub fn forwarded_value<'a>(req: &'a actix_web::HttpRequest, header: &str) -> Option<&'a str> {
    req.app_data::<web::Data<InternalListener>>()?;
    req.headers().get(header).and_then(|v| v.to_str().ok())
}

/// Whether `req` came in on the internal listener.
pub fn is_internal(req: &ServiceRequest) -> bool {
    req.app_data::<web::Data<InternalListener>>().is_some()
}

/// Runs the request here, or, if its load is held by another instance,
/// there (see the module). Called inside authentication and idempotency, so
/// that the request is counted and its key kept once, here, whoever runs it.
pub async fn serve_or_forward<B>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B, BoxBody>>, actix_web::Error>
where
    B: MessageBody + 'static,
{
    let forwarder = req
        .app_data::<web::Data<dyn ForwardRequests>>()
        .cloned()
        .filter(|_| !is_internal(&req));
    let Some(forwarder) = forwarder else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    // The body is kept to send again (only requests that have one).
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return run_or_forward(forwarder.get_ref(), req, next, Bytes::new()).await;
    }
    match buffer_body(req).await {
        Ok((req, body)) => run_or_forward(forwarder.get_ref(), req, next, body).await,
        Err((req, error)) => Ok(req
            .into_response(error.error_response())
            .map_into_right_body()),
    }
}

async fn run_or_forward<B>(
    forwarder: &dyn ForwardRequests,
    req: ServiceRequest,
    next: Next<B>,
    body: Bytes,
) -> Result<ServiceResponse<EitherBody<B, BoxBody>>, actix_web::Error>
where
    B: MessageBody + 'static,
{
    let response = next.call(req).await?;
    let holder = response
        .response()
        .extensions()
        .get::<LeaseHolder>()
        .cloned();
    let Some(LeaseHolder(holder)) = holder else {
        return Ok(response.map_into_left_body());
    };
    let (http, _) = response.into_parts();
    let relayed = match forwarder.forward_request(&holder, &http, body).await {
        Ok(relayed) => relayed,
        Err(error) => ApiError::from(error).error_response(),
    };
    Ok(ServiceResponse::new(http, relayed).map_into_right_body())
}
