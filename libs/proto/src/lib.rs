//! The Basra online gRPC API, generated from `proto/basra/**.proto`.
//!
//! Modules mirror the protobuf packages, so `basra.game.v1.PlayResponse` is
//! [`basra::game::v1::PlayResponse`]. Each service comes with a client
//! (`<service>_client::<Service>Client`) and a server
//! (`<service>_server::<Service>` trait and `<Service>Server` wrapper):
//!
//! | package | services |
//! |---|---|
//! | `basra.common.v1` | none: cards, rule settings, the per-seat game view |
//! | `basra.accounts.v1` | `AccountsService` |
//! | `basra.matchmaking.v1` | `MatchmakingService` |
//! | `basra.game.v1` | `GameService`, `GameAdminService` |
//!
//! The `.proto` files are the reference documentation of the API; their
//! comments are copied onto the generated items. [`FILE_DESCRIPTOR_SET`] feeds
//! gRPC server reflection.
//!
//! The code is generated at build time by `build.rs` with protox (pure Rust,
//! no system `protoc`) and tonic-prost-build.
//!
//! The generated modules deliberately get no `#[allow(missing_docs)]`: prost
//! turns proto comments into doc comments, so the workspace `missing_docs`
//! lint (an error under `clippy -D warnings`) makes an uncommented message,
//! field, enum value, service or RPC fail the build.

/// Protobuf packages under `basra`.
pub mod basra {
    /// Package `basra.common`.
    pub mod common {
        /// Package `basra.common.v1`: cards, rule settings, seats, scores and
        /// the per-seat game view shared by every service.
        pub mod v1 {
            tonic::include_proto!("basra.common.v1");
        }
    }

    /// Package `basra.accounts`.
    pub mod accounts {
        /// Package `basra.accounts.v1`: sign-in, tokens, profiles, the
        /// leaderboard, match history and the internal `RecordMatch`.
        pub mod v1 {
            tonic::include_proto!("basra.accounts.v1");
        }
    }

    /// Package `basra.matchmaking`.
    pub mod matchmaking {
        /// Package `basra.matchmaking.v1`: the match queue and rooms.
        pub mod v1 {
            tonic::include_proto!("basra.matchmaking.v1");
        }
    }

    /// Package `basra.game`.
    pub mod game {
        /// Package `basra.game.v1`: the `GameService` play stream and the operators'
        /// `GameAdminService` service.
        pub mod v1 {
            tonic::include_proto!("basra.game.v1");
        }
    }
}

pub mod codec;
pub mod convert;
pub mod event_changes;

/// The encoded `google.protobuf.FileDescriptorSet` of every Basra proto file
/// (and the well-known types they import), for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/basra_descriptor.bin"));
