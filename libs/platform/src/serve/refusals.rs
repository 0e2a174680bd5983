//! The documented answers to a client's own faults, which tonic and HTTP/2 would answer
//! otherwise: metadata over `server.limits.max_header_list_bytes` is refused here with
//! RESOURCE_EXHAUSTED (HTTP/2 itself would reset the call with HTTP 431, which clients
//! read as UNKNOWN, and close the connection past four times its limit); a request
//! message over the service's limit is RESOURCE_EXHAUSTED (tonic says OUT_OF_RANGE), and
//! one that does not decode is INVALID_ARGUMENT (tonic says INTERNAL, which the
//! `BasraRpcErrors` alert counts as the server's fault).
//!
//! tonic fails such a request before any handler runs, with a trailers-only answer whose
//! message is its own: [`client_fault`] knows those messages. A handler that reads a
//! stream of requests (`Play`) sees the failure itself and answers for it.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::Body as HttpBody;
use tonic::{Code, Status, body::Body};
use tower::{Layer, Service};

/// The start of the messages tonic gives a request it cannot read, and the code the API
/// documents for each.
const CLIENT_FAULTS: [(Code, &str, Code); 6] = [
    (
        Code::OutOfRange,
        "Error, decoded message length too large",
        Code::ResourceExhausted,
    ),
    (
        Code::Internal,
        "failed to decode Protobuf message",
        Code::InvalidArgument,
    ),
    (
        Code::Internal,
        "protocol error: received message with",
        Code::InvalidArgument,
    ),
    (
        Code::Internal,
        "Unexpected EOF decoding stream",
        Code::InvalidArgument,
    ),
    (Code::Internal, "Error decompressing", Code::InvalidArgument),
    (
        Code::Internal,
        "Missing request message",
        Code::InvalidArgument,
    ),
];

/// The documented code for `status` when tonic gave it to a request it could not read.
fn client_fault(status: &Status) -> Option<Code> {
    CLIENT_FAULTS
        .iter()
        .find(|(code, start, _)| status.code() == *code && status.message().starts_with(start))
        .map(|(_, _, documented)| *documented)
}

/// A call's metadata size as HTTP/2 counts it (RFC 9113 §6.5.2): each field's name and
/// value plus 32 bytes, the pseudo-headers included.
fn header_list_size<B>(request: &Request<B>) -> usize {
    const OVERHEAD: usize = 32;
    let uri = request.uri();
    let pseudo = [
        (":method", request.method().as_str().len()),
        (":scheme", uri.scheme_str().map_or(0, str::len)),
        (
            ":authority",
            uri.authority().map_or(0, |a| a.as_str().len()),
        ),
        (
            ":path",
            uri.path_and_query().map_or(0, |p| p.as_str().len()),
        ),
    ]
    .iter()
    .map(|(name, len)| name.len() + len + OVERHEAD)
    .sum::<usize>();
    pseudo
        + request
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + OVERHEAD)
            .sum::<usize>()
}

/// Answers clients' faults with the documented codes (see the module's comment).
#[derive(Debug, Clone, Copy)]
pub(super) struct RefusalsLayer {
    max_header_list_bytes: usize,
}

impl RefusalsLayer {
    pub(super) fn new(max_header_list_bytes: u32) -> RefusalsLayer {
        RefusalsLayer {
            max_header_list_bytes: max_header_list_bytes as usize,
        }
    }
}

impl<S> Layer<S> for RefusalsLayer {
    type Service = Refusals<S>;

    fn layer(&self, inner: S) -> Refusals<S> {
        Refusals {
            inner,
            max_header_list_bytes: self.max_header_list_bytes,
        }
    }
}

/// The service made by [`RefusalsLayer`].
#[derive(Debug, Clone)]
pub(super) struct Refusals<S> {
    inner: S,
    max_header_list_bytes: usize,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Refusals<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<tonic::codegen::StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let size = header_list_size(&request);
        if size > self.max_header_list_bytes {
            let status = Status::resource_exhausted(format!(
                "the call's metadata is {size} bytes, over the server's limit of {} (send fewer or smaller headers)",
                self.max_header_list_bytes
            ));
            return Box::pin(std::future::ready(Ok(status.into_http())));
        }
        let future = self.inner.call(request);
        Box::pin(async move {
            let mut response = future.await?.map(Body::new);
            documented(response.headers_mut());
            Ok(response)
        })
    }
}

/// Rewrites a trailers-only answer's status to the documented code, if tonic gave it.
fn documented(headers: &mut HeaderMap) {
    let Some(status) = Status::from_header_map(headers) else {
        return;
    };
    if let Some(code) = client_fault(&status) {
        let message = status.message().to_owned();
        // The message is valid metadata (it came from there): the write cannot fail.
        let _ = Status::new(code, message).add_header(headers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tonic_s_own_refusals_get_the_documented_codes() {
        let cases = [
            (
                Status::out_of_range(
                    "Error, decoded message length too large: found 2147483648 bytes, the limit is: 16384 bytes",
                ),
                Some(Code::ResourceExhausted),
            ),
            (
                Status::internal("failed to decode Protobuf message: invalid wire type value: 7"),
                Some(Code::InvalidArgument),
            ),
            (
                Status::internal("Unexpected EOF decoding stream."),
                Some(Code::InvalidArgument),
            ),
            // A handler's own answers are left alone.
            (Status::internal("internal error"), None),
            (Status::out_of_range("page 9 of 3"), None),
        ];
        for (status, expected) in cases {
            assert_eq!(client_fault(&status), expected, "{status:?}");
        }
    }

    #[test]
    fn a_rewritten_answer_keeps_its_message() {
        let mut headers = HeaderMap::new();
        Status::internal("failed to decode Protobuf message: buffer underflow")
            .add_header(&mut headers)
            .unwrap();
        documented(&mut headers);
        let status = Status::from_header_map(&headers).unwrap();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(
            status.message(),
            "failed to decode Protobuf message: buffer underflow"
        );
    }

    #[test]
    fn metadata_is_counted_as_http2_counts_it() {
        let request = Request::builder()
            .method("POST")
            .uri("http://h/a.B/C")
            .header("x", "yy")
            .body(())
            .unwrap();
        // :method POST, :scheme http, :authority h, :path /a.B/C, x: yy.
        let expected = (7 + 4) + (7 + 4) + (10 + 1) + (5 + 6) + (1 + 2) + 5 * 32;
        assert_eq!(header_list_size(&request), expected);
    }
}
