//! `GameService` as the replica serves it: `Play` through a route of its own, the other
//! methods through tonic's generated server.
//!
//! The generated server encodes every Play message itself, as a `PlayResponse`. A Play
//! stream also sends bytes encoded once for every viewer who sees an event alike
//! ([`crate::replica::shared_bytes`]), so its route uses [`PreEncodedCodec`], which copies such
//! bytes into the stream's frames as they are. Everything else about the call is the
//! generated server's: the same path, the same request decoding and size limit, the same
//! handler (`GameApi::play_stream`).

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use basra_proto::basra::game::v1::{
    PlayRequest, PlayResponse, game_service_server::GameServiceServer,
};
use basra_proto::codec::PreEncodedCodec;
use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
use tonic::server::{NamedService, StreamingService};
use tonic::{Status, Streaming};

use crate::MAX_MESSAGE_BYTES;
use crate::api::GameApi;
use crate::stream::response::{Outgoing, SessionStream};

/// The path of `GameService.Play`.
const PLAY_PATH: &str = "/basra.game.v1.GameService/Play";

/// `GameService`, Play sending shared bytes.
#[derive(Debug, Clone)]
pub struct GameRoutes {
    api: Arc<GameApi>,
    generated: GameServiceServer<GameApi>,
}

impl GameRoutes {
    /// The service over `api`.
    pub fn new(api: GameApi) -> GameRoutes {
        let api = Arc::new(api);
        GameRoutes {
            generated: GameServiceServer::from_arc(Arc::clone(&api))
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            api,
        }
    }
}

impl NamedService for GameRoutes {
    const NAME: &'static str = <GameServiceServer<GameApi> as NamedService>::NAME;
}

impl<B> Service<http::Request<B>> for GameRoutes
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if request.uri().path() != PLAY_PATH {
            return self.generated.call(request);
        }
        let play = Play(Arc::clone(&self.api));
        Box::pin(async move {
            let mut grpc =
                tonic::server::Grpc::new(PreEncodedCodec::<PlayResponse, PlayRequest>::default())
                    .apply_max_message_size_config(Some(MAX_MESSAGE_BYTES), None);
            Ok(grpc.streaming(play, request).await)
        })
    }
}

/// The Play method's handler.
struct Play(Arc<GameApi>);

impl StreamingService<PlayRequest> for Play {
    type Response = Outgoing;
    type ResponseStream = SessionStream;
    type Future = BoxFuture<tonic::Response<SessionStream>, Status>;

    fn call(&mut self, request: tonic::Request<Streaming<PlayRequest>>) -> Self::Future {
        let api = Arc::clone(&self.0);
        Box::pin(async move { api.play_stream(request).await.map(tonic::Response::new) })
    }
}
