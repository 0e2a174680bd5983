//! Friend links between signed-in players, made as players make them ([`FriendLinks`]).

use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use tonic::transport::Channel;

use crate::authed;

/// Friend links between signed-in players, made through `AccountsService` as the players
/// make them (`AddFriend` by user id, `BlockPlayer`), one call after another in the order
/// given; each must succeed.
///
/// ```no_run
/// # async fn demo(
/// #     client: &mut basra_testkit::accounts::AccountsClient,
/// #     [alice, bob, carol, erin]: [basra_proto::basra::accounts::v1::AuthTokens; 4],
/// # ) {
/// use basra_testkit::accounts::FriendLinks;
///
/// FriendLinks::new()
///     .friends(&alice, &bob) // alice asks bob, bob asks back: friends
///     .request(&alice, &carol) // asked, not answered
///     .block(&alice, &erin)
///     .make(client)
///     .await;
/// # }
/// ```
#[derive(Debug, Default)]
#[must_use = "nothing is linked until `make`"]
pub struct FriendLinks<'a> {
    steps: Vec<Step<'a>>,
}

#[derive(Debug)]
enum Step<'a> {
    /// `AddFriend` by the first, naming the second.
    Ask(&'a pb::AuthTokens, &'a pb::AuthTokens),
    /// `BlockPlayer` by the first, naming the second.
    Block(&'a pb::AuthTokens, &'a pb::AuthTokens),
}

impl<'a> FriendLinks<'a> {
    /// No links yet.
    pub fn new() -> FriendLinks<'a> {
        FriendLinks::default()
    }

    /// `a` and `b` become friends: `a` asks, then `b` asks back (which accepts).
    pub fn friends(self, a: &'a pb::AuthTokens, b: &'a pb::AuthTokens) -> FriendLinks<'a> {
        self.request(a, b).request(b, a)
    }

    /// `from` asks `to` to be friends.
    pub fn request(mut self, from: &'a pb::AuthTokens, to: &'a pb::AuthTokens) -> FriendLinks<'a> {
        self.steps.push(Step::Ask(from, to));
        self
    }

    /// `blocker` blocks `blocked`.
    pub fn block(
        mut self,
        blocker: &'a pb::AuthTokens,
        blocked: &'a pb::AuthTokens,
    ) -> FriendLinks<'a> {
        self.steps.push(Step::Block(blocker, blocked));
        self
    }

    /// Makes the links, in order. Panics, naming the step, when a call fails.
    pub async fn make(self, client: &mut AccountsServiceClient<Channel>) {
        for step in self.steps {
            let (done, what) = match step {
                Step::Ask(from, to) => (
                    client
                        .add_friend(authed(
                            pb::AddFriendRequest {
                                target: Some(pb::add_friend_request::Target::UserId(
                                    to.user_id.clone(),
                                )),
                            },
                            &from.access_token,
                        ))
                        .await
                        .map(drop),
                    format!("{} asks {} to be friends", from.user_id, to.user_id),
                ),
                Step::Block(blocker, blocked) => (
                    client
                        .block_player(authed(
                            pb::BlockPlayerRequest {
                                user_id: blocked.user_id.clone(),
                            },
                            &blocker.access_token,
                        ))
                        .await
                        .map(drop),
                    format!("{} blocks {}", blocker.user_id, blocked.user_id),
                ),
            };
            if let Err(status) = done {
                panic!("{what}: {status:?}");
            }
        }
    }
}
