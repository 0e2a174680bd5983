//! basra-push against local stand-ins of the providers, started by each test
//! (`basra_testkit::push`, shared with accounts' tests): FCM's token and send endpoints
//! over HTTP/1.1, APNs over HTTP/2 with TLS. Keys and certificates are made by openssl in
//! each test's temporary directory; nothing secret is committed.

mod apns;
mod fcm;
