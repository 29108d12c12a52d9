//! The endpoint's HTTP side (hyper, HTTP/1.1): `GET /metrics` answers the scrape, any other
//! path 404, a method other than GET or HEAD 405. Each connection is served on its
//! own task until the broker stops.

use super::render;
use crate::broker::Broker;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What `prometheus_client::encoding::text` writes: OpenMetrics 1.0 text (Prometheus asks for it
/// first in its `Accept` header).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds `addr` (`metrics.listen`). Errors: the address is taken or not local.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves scrapes on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = crate::server::listener::accept(&listener, "metrics") => {
                let Some((stream, peer)) = accepted else { continue };
                let broker = broker.clone();
                let mut stop = shutdown.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| answer(req, broker.clone()));
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(conn);
                    tokio::select! {
                        r = conn.as_mut() => {
                            if let Err(e) = r {
                                tracing::debug!(%peer, error = %e, "metrics endpoint: connection failed");
                            }
                        }
                        _ = stop.changed() => {}
                    }
                });
            }
            _ = shutdown.changed() => break,
        }
    }
}

async fn answer(
    req: Request<Incoming>,
    broker: Arc<Broker>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status: StatusCode, body: Bytes| {
        let mut r = Response::new(Full::new(body));
        *r.status_mut() = status;
        r
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Ok(reply(StatusCode::METHOD_NOT_ALLOWED, Bytes::new()));
    }
    if req.uri().path() != "/metrics" {
        return Ok(reply(
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"try /metrics\n"),
        ));
    }
    // Reading the partitions and groups takes short locks: off the runtime's worker threads.
    let text = tokio::task::spawn_blocking(move || render(&broker))
        .await
        .unwrap_or_default();
    let mut r = reply(StatusCode::OK, Bytes::from(text));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(CONTENT_TYPE),
    );
    Ok(r)
}
