//! `GameService`: what players call. Play is served through [`super::play_route`] (this
//! implementation serves it for a server mounted without that route); the browser's
//! calls are in [`super::web`].

use std::pin::Pin;

use basra_proto::basra::game::v1::{
    self as game, PlayRequest, PlayResponse, game_service_server::GameService,
};
use tokio_stream::{Stream, StreamExt as _};
use tonic::{Request, Response, Status, Streaming};

use super::{GameApi, web};
use crate::stream::response::message_of;

type EventStream = Pin<Box<dyn Stream<Item = Result<PlayResponse, Status>> + Send>>;

#[tonic::async_trait]
impl GameService for GameApi {
    type PlayStream = EventStream;

    /// Play as tonic's generated server would serve it, every message a `PlayResponse`.
    /// The replica's routes serve Play through [`crate::api::play_route`] instead, which sends
    /// shared bytes as they are; this is for a server mounted without it.
    async fn play(
        &self,
        request: Request<Streaming<PlayRequest>>,
    ) -> Result<Response<EventStream>, Status> {
        let events = self.play_stream(request).await?;
        Ok(Response::new(Box::pin(events.map(message_of))))
    }

    type WatchStream = web::WatchStream;

    async fn watch(
        &self,
        request: Request<game::WatchRequest>,
    ) -> Result<Response<web::WatchStream>, Status> {
        web::watch(self, request).await
    }

    async fn play_card(
        &self,
        request: Request<game::PlayCardRequest>,
    ) -> Result<Response<game::PlayCardResponse>, Status> {
        web::play_card(self, request).await
    }

    async fn resign(
        &self,
        request: Request<game::ResignRequest>,
    ) -> Result<Response<game::ResignResponse>, Status> {
        web::resign(self, request).await
    }

    async fn quick_chat(
        &self,
        request: Request<game::QuickChatRequest>,
    ) -> Result<Response<game::QuickChatResponse>, Status> {
        web::quick_chat(self, request).await
    }

    async fn ask_rematch(
        &self,
        request: Request<game::AskRematchRequest>,
    ) -> Result<Response<game::AskRematchResponse>, Status> {
        web::ask_rematch(self, request).await
    }
}
