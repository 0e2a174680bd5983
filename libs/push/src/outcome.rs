//! What became of one push, and so what the caller does next.
//!
//! | outcome | FCM answer | APNs answer | the caller |
//! |---|---|---|---|
//! | [`Accepted`](Outcome::Accepted) | 200 | 200 | forgets the push (the provider delivers it) |
//! | [`DeadToken`](Outcome::DeadToken) | 404 / `UNREGISTERED`; 400 `INVALID_ARGUMENT` about `message.token` | 410 (`Unregistered`, `ExpiredToken`); 400 `BadDeviceToken`, `DeviceTokenNotForTopic` | removes the device token |
//! | [`RetryLater`](Outcome::RetryLater) | 429, 5xx, no answer, token endpoint 429/5xx | 429, 5xx, no answer | retries after [`Backoff::delay`](crate::Backoff::delay), until the push expires |
//! | [`Misconfigured`](Outcome::Misconfigured) | 401 (after one new access token), 403; the token endpoint refusing the JWT | 403 (`ExpiredProviderToken` after one new provider token), `TopicDisallowed`, 404, 405 | keeps the token and the push, alerts an operator: every push fails alike |
//! | [`Rejected`](Outcome::Rejected) | any other 4xx | any other 4xx (`PayloadTooLarge`, `BadCollapseId`, …) | drops this push (sending it again fails again), keeps the token |
//! | [`Expired`](Outcome::Expired) | — (not sent) | — (not sent) | drops the push |

use std::time::{Duration, SystemTime};

use http::HeaderMap;

/// What became of one push. Reasons are for the logs: they never hold a credential or
/// a device token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The provider accepted the push and will deliver it when the device is reachable
    /// (delivery to the device itself is not reported by either provider).
    Accepted {
        /// FCM's message name (`projects/…/messages/…`) or APNs's `apns-id`.
        id: Option<String>,
    },
    /// The device token no longer reaches an app: remove it.
    DeadToken {
        /// The provider's words.
        reason: String,
    },
    /// Try again later, not before `after` when the provider said so (`Retry-After`).
    RetryLater {
        /// The provider's `Retry-After`, if it gave one.
        after: Option<Duration>,
        /// What failed.
        reason: String,
    },
    /// The credentials or the settings are wrong (a revoked key, a wrong project or team,
    /// an endpoint that is not the provider): every push fails alike until an operator
    /// fixes them. Keep the token.
    Misconfigured {
        /// What the provider or the setting said.
        reason: String,
    },
    /// The provider refused this push itself (too large, a bad field): sending it again
    /// fails again. Keep the token, drop the push.
    Rejected {
        /// The provider's words, or which local check failed.
        reason: String,
    },
    /// The push's expiry passed before it was sent: nothing was sent.
    Expired,
}

impl Outcome {
    /// A [`RetryLater`](Outcome::RetryLater) with no `Retry-After`.
    pub(crate) fn retry(reason: impl Into<String>) -> Outcome {
        Outcome::RetryLater {
            after: None,
            reason: reason.into(),
        }
    }

    /// A stable lowercase name for metrics and logs: `accepted`, `dead_token`,
    /// `retry_later`, `misconfigured`, `rejected`, `expired`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Accepted { .. } => "accepted",
            Outcome::DeadToken { .. } => "dead_token",
            Outcome::RetryLater { .. } => "retry_later",
            Outcome::Misconfigured { .. } => "misconfigured",
            Outcome::Rejected { .. } => "rejected",
            Outcome::Expired => "expired",
        }
    }
}

/// The `Retry-After` of an answer: delay-seconds, or an HTTP date (its distance from
/// `now`, zero when it has passed). `None` when absent or unreadable.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let date = SystemTime::from(date.with_timezone(&chrono::Utc));
    Some(date.duration_since(now).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::RETRY_AFTER,
            HeaderValue::from_str(value).unwrap(),
        );
        headers
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_717); // 08:48:37 GMT
        assert_eq!(
            retry_after(&headers("120"), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            retry_after(&headers("Sun, 06 Nov 1994 08:49:37 GMT"), now),
            Some(Duration::from_secs(60))
        );
        // A date already past: retry now.
        assert_eq!(
            retry_after(&headers("Sun, 06 Nov 1994 08:47:37 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers("soon"), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }
}
