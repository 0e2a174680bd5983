//! accounts started for a test, the way zero-to-production's `spawn_app()` starts its app
//! (feature `accounts`): [`spawn_app`] serves the service on a store (the memory store,
//! or PostgreSQL on `#[sqlx::test]`'s fresh database) on 127.0.0.1 and a free port and
//! answers a [`TestApp`]: the server, clients, the store, tokens of every role; dropping
//! it stops the server. [`TestApp::builder`] changes the settings or where presence and
//! notes live. [`AccountsClient`] holds both of accounts' gRPC clients on one connection;
//! [`FriendLinks`] makes friendships, requests and blocks as players make them.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use basra_testkit::accounts::{FriendLinks, spawn_app};
//! use basra_testkit::authed;
//! use basra_proto::basra::accounts::v1 as pb;
//!
//! let app = spawn_app(accounts::MemoryStore::new()).await;
//! let mut client = app.client().await;
//! let mut players = Vec::new();
//! for device in ["device-a", "device-b"] {
//!     let request = pb::GuestLoginRequest { device_id: device.into(), ..Default::default() };
//!     players.push(client.guest_login(request).await.unwrap().into_inner().tokens.unwrap());
//! }
//! let (amira, badr) = (&players[0], &players[1]);
//! FriendLinks::new().friends(amira, badr).make(&mut client).await;
//! let friends = client
//!     .list_friends(authed(pb::ListFriendsRequest::default(), &amira.access_token))
//!     .await
//!     .unwrap();
//! assert_eq!(friends.into_inner().friends.len(), 1);
//! assert_eq!(app.counts().await.friend_links, 2);
//! # }
//! ```

mod app;
mod client;
mod links;

pub use app::{Builder, KID, TestApp, spawn_app, test_settings};
pub use client::AccountsClient;
pub use links::FriendLinks;
