//! Local stand-ins of the push providers (feature `push`), shared by basra-push's tests
//! and accounts': [`FcmStandIn`] (Google's token endpoint and FCM's HTTP v1 send, over
//! HTTP/1.1) and [`ApnsStandIn`] (APNs over HTTP/2 with TLS and a test CA), each
//! recording what it receives ([`StandIn`]) and answering scripted replies; their keys
//! and certificates made by openssl in a temporary directory ([`Keys`]), so nothing
//! secret is committed.

pub mod apns;
pub mod fcm;
mod keys;
mod standin;

pub use apns::ApnsStandIn;
pub use fcm::FcmStandIn;
pub use keys::Keys;
pub use standin::{Handler, Recorded, Reply, StandIn};
