//! `GameService.Play`: the caller admitted, its join message read, then the stream's
//! session opened ([`crate::stream`]), which runs inside the response.

use basra_platform::auth;
use basra_proto::basra::game::v1::{PlayRequest, play_request::Kind};
use tonic::{Request, Status, Streaming};

use super::{GameApi, invalid};
use crate::replica::StreamKind;
use crate::stream::response::SessionStream;
use crate::stream::{Session, inbound_status};

impl GameApi {
    /// A Play stream: its join first, then its session (see [`crate::api::play_route`], which
    /// serves it).
    #[tracing::instrument(skip_all, fields(user_id, room_id))]
    pub(crate) async fn play_stream(
        &self,
        request: Request<Streaming<PlayRequest>>,
    ) -> Result<SessionStream, Status> {
        let caller = auth::player(&request)?;
        let user_id = caller.user_id.to_string();
        tracing::Span::current().record("user_id", user_id.as_str());
        let permit = self.replica.admit(caller.user_id, StreamKind::Play)?;
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(self.replica.config.join_timeout, inbound.message())
            .await
            .map_err(|_| invalid("no join message within the join timeout"))?
            .map_err(inbound_status)?
            .ok_or_else(|| invalid("the stream ended before its join message"))?;
        let Some(Kind::Join(join)) = first.kind else {
            return Err(invalid("the first message must be join"));
        };
        Ok(Session::open(
            &self.replica,
            &self.chat,
            &user_id,
            join,
            Some(inbound),
            permit,
        )
        .await?)
    }
}
