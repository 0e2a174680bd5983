//! What an answer of APNs means. An error answer's body is `{"reason": "BadDeviceToken"}`
//! (410s add a `timestamp`).
//!
//! | answer | verdict |
//! |---|---|
//! | 200 | accepted (`apns-id` is the id) |
//! | 410 (`Unregistered`, `ExpiredToken`) | dead token: the app is gone from the device |
//! | 400 `BadDeviceToken` | dead token: not a token of this environment |
//! | 400 `DeviceTokenNotForTopic` | dead token: the token belongs to another app than the one it was registered with |
//! | 403 `ExpiredProviderToken` | expired: one new provider token, one more try (then misconfigured) |
//! | 403 other (`InvalidProviderToken`, `MissingProviderToken`, …), 400 `TopicDisallowed`, 404, 405 | misconfigured |
//! | 429 (`TooManyRequests`, `TooManyProviderTokenUpdates`), 5xx | retry later, after `Retry-After` when given |
//! | any other 4xx (`PayloadTooLarge`, `BadCollapseId`, `BadExpirationDate`, …) | rejected |

use std::time::SystemTime;

use http::StatusCode;
use serde::Deserialize;

use crate::http::Answer;
use crate::outcome::{Outcome, retry_after};

/// What to do with an answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Final.
    Done(Outcome),
    /// `ExpiredProviderToken`: replace the provider token and send once more.
    ExpiredProviderToken(String),
}

#[derive(Deserialize, Default)]
struct ErrorAnswer {
    #[serde(default)]
    reason: String,
}

/// The verdict on `answer`, received at `now`.
pub(crate) fn classify(answer: &Answer, now: SystemTime) -> Verdict {
    let status = answer.status;
    if status == StatusCode::OK {
        let id = answer
            .headers
            .get("apns-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        return Verdict::Done(Outcome::Accepted { id });
    }
    let reason_code = serde_json::from_slice::<ErrorAnswer>(&answer.body)
        .unwrap_or_default()
        .reason;
    let reason = format!("APNs {} {reason_code}", status.as_u16());
    let outcome = match (status.as_u16(), reason_code.as_str()) {
        (410, _) | (400, "BadDeviceToken" | "DeviceTokenNotForTopic") => {
            Outcome::DeadToken { reason }
        }
        (403, "ExpiredProviderToken") => return Verdict::ExpiredProviderToken(reason),
        (403, _) | (400, "TopicDisallowed") | (404 | 405, _) => Outcome::Misconfigured { reason },
        (429, _) | (500..=599, _) => Outcome::RetryLater {
            after: retry_after(&answer.headers, now),
            reason,
        },
        _ => Outcome::Rejected { reason },
    };
    Verdict::Done(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http::HeaderMap;
    use std::time::Duration;

    fn verdict(status: u16, reason: &str) -> Verdict {
        let answer = Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: Bytes::from(format!(r#"{{"reason": "{reason}"}}"#)),
        };
        classify(&answer, SystemTime::UNIX_EPOCH)
    }

    fn outcome(status: u16, reason: &str) -> Outcome {
        match verdict(status, reason) {
            Verdict::Done(outcome) => outcome,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_table() {
        for (status, reason) in [
            (410, "Unregistered"),
            (410, "ExpiredToken"),
            (400, "BadDeviceToken"),
            (400, "DeviceTokenNotForTopic"),
        ] {
            assert!(
                matches!(outcome(status, reason), Outcome::DeadToken { .. }),
                "{status} {reason}"
            );
        }
        for (status, reason) in [
            (403, "InvalidProviderToken"),
            (403, "MissingProviderToken"),
            (400, "TopicDisallowed"),
            (404, "BadPath"),
            (405, "MethodNotAllowed"),
        ] {
            assert!(
                matches!(outcome(status, reason), Outcome::Misconfigured { .. }),
                "{status} {reason}"
            );
        }
        for (status, reason) in [
            (429, "TooManyRequests"),
            (429, "TooManyProviderTokenUpdates"),
            (500, "InternalServerError"),
            (503, "ServiceUnavailable"),
            (503, "Shutdown"),
        ] {
            assert!(
                matches!(
                    outcome(status, reason),
                    Outcome::RetryLater { after: None, .. }
                ),
                "{status} {reason}"
            );
        }
        for (status, reason) in [
            (413, "PayloadTooLarge"),
            (400, "BadCollapseId"),
            (400, "BadExpirationDate"),
            (400, "MissingTopic"),
        ] {
            assert!(
                matches!(outcome(status, reason), Outcome::Rejected { .. }),
                "{status} {reason}"
            );
        }
        assert_eq!(
            verdict(403, "ExpiredProviderToken"),
            Verdict::ExpiredProviderToken("APNs 403 ExpiredProviderToken".into())
        );
    }

    #[test]
    fn accepted_with_its_id_and_retry_after_read() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "apns-id",
            "EC1BF194-B3B2-424A-89A9-5A918A6E6B5D".parse().unwrap(),
        );
        let ok = Answer {
            status: StatusCode::OK,
            headers,
            body: Bytes::new(),
        };
        assert_eq!(
            classify(&ok, SystemTime::UNIX_EPOCH),
            Verdict::Done(Outcome::Accepted {
                id: Some("EC1BF194-B3B2-424A-89A9-5A918A6E6B5D".into())
            })
        );
        let mut headers = HeaderMap::new();
        headers.insert(http::header::RETRY_AFTER, "9".parse().unwrap());
        let busy = Answer {
            status: StatusCode::TOO_MANY_REQUESTS,
            headers,
            body: Bytes::new(),
        };
        assert!(matches!(
            classify(&busy, SystemTime::UNIX_EPOCH),
            Verdict::Done(Outcome::RetryLater { after: Some(d), .. }) if d == Duration::from_secs(9)
        ));
    }
}
