//! Which client app makes a call: the `basra-client` metadata every client sends
//! (`web/1.2.0`, `cli/0.4.1`, `android/2.0.3`): a platform and the app's version.
//! accounts keeps it with each sign-in (a session) and, when it records a match, with
//! each human seat (the player's latest sign-in at or before the match's end), so the
//! analyst views and the export can count players and matches by platform and version.
//!
//! It is informational: a call without it, or with a value that is not
//! `<platform>/<version>` as below, is served the same and recorded as from an unknown
//! client (the value is never refused).

use tonic::metadata::MetadataMap;

/// The metadata key.
pub const CLIENT_HEADER: &str = "basra-client";

/// Most characters of a platform name.
pub const PLATFORM_MAX: usize = 16;

/// Most characters of a version.
pub const VERSION_MAX: usize = 32;

/// A client app: its platform and version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientInfo {
    /// `web`, `cli`, `android`, `ios`, …: 1–16 of `a-z`, `0-9`, `-`.
    pub platform: String,
    /// The app's version: 1–32 of `A-Z a-z 0-9 . - + _`.
    pub version: String,
}

impl ClientInfo {
    /// `<platform>/<version>` read, or `None` when it is not in that form (the platform
    /// is lower-cased first).
    pub fn parse(value: &str) -> Option<ClientInfo> {
        let (platform, version) = value.trim().split_once('/')?;
        let platform = platform.to_ascii_lowercase();
        let platform_ok = (1..=PLATFORM_MAX).contains(&platform.len())
            && platform
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        let version_ok = (1..=VERSION_MAX).contains(&version.len())
            && version
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+' | b'_'));
        (platform_ok && version_ok).then(|| ClientInfo {
            platform,
            version: version.to_owned(),
        })
    }

    /// The client a call names in its `basra-client` metadata, if any (and well formed).
    pub fn from_metadata(metadata: &MetadataMap) -> Option<ClientInfo> {
        metadata
            .get(CLIENT_HEADER)
            .and_then(|value| value.to_str().ok())
            .and_then(ClientInfo::parse)
    }
}

impl std::fmt::Display for ClientInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.platform, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_and_version_are_read_from_the_metadata() {
        let mut metadata = MetadataMap::new();
        assert_eq!(ClientInfo::from_metadata(&metadata), None);
        metadata.insert(CLIENT_HEADER, "Web/1.2.0-rc.1+build_7".parse().unwrap());
        let client = ClientInfo::from_metadata(&metadata).unwrap();
        assert_eq!(client.platform, "web");
        assert_eq!(client.version, "1.2.0-rc.1+build_7");
        assert_eq!(client.to_string(), "web/1.2.0-rc.1+build_7");
        assert_eq!(
            ClientInfo::parse("android/2.0.3"),
            Some(ClientInfo {
                platform: "android".into(),
                version: "2.0.3".into()
            })
        );
    }

    #[test]
    fn malformed_values_are_an_unknown_client() {
        for value in [
            "",
            "web",
            "/1.0",
            "web/",
            "we b/1.0",
            "web/1.0 beta",
            "web/1/2",
            "a-very-long-platform-name/1.0",
            &format!("web/{}", "9".repeat(33)),
        ] {
            assert_eq!(ClientInfo::parse(value), None, "{value:?}");
        }
    }
}
