//! What an answer of FCM's send endpoint means.
//!
//! An error answer is `{"error": {"code", "message", "status", "details": [...]}}`; the
//! details carry FCM's own code (`{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
//! "errorCode": "UNREGISTERED"}`) and, for a bad field, which one
//! (`google.rpc.BadRequest` with `fieldViolations: [{"field": "message.token"}]`).
//!
//! | answer | verdict |
//! |---|---|
//! | 200 `{"name": …}` | accepted |
//! | 404, or `UNREGISTERED` | dead token: the app was uninstalled or the token expired |
//! | 400 `INVALID_ARGUMENT` about `message.token` (a field violation, or "registration token" in the message) | dead token: not a token FCM knows |
//! | 400, other | rejected: this message is wrong |
//! | 401 `THIRD_PARTY_AUTH_ERROR` | misconfigured (the APNs credentials in Firebase) |
//! | 401, other | unauthenticated: the access token was refused (one new token, then misconfigured) |
//! | 403 (`SENDER_ID_MISMATCH`, `PERMISSION_DENIED`) | misconfigured: never a reason to drop the token, since a wrong project would answer this for every token |
//! | 429 (`QUOTA_EXCEEDED`), 5xx (`UNAVAILABLE`, `INTERNAL`) | retry later, after `Retry-After` when given |
//! | any other 4xx | rejected |

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
    /// The access token was refused: get another and send once more.
    Unauthenticated(String),
}

#[derive(Deserialize, Default)]
struct ErrorAnswer {
    #[serde(default)]
    error: ErrorBody,
}

#[derive(Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    message: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    details: Vec<Detail>,
}

#[derive(Deserialize, Default)]
struct Detail {
    #[serde(rename = "@type", default)]
    kind: String,
    #[serde(rename = "errorCode", default)]
    error_code: String,
    #[serde(rename = "fieldViolations", default)]
    field_violations: Vec<FieldViolation>,
}

#[derive(Deserialize, Default)]
struct FieldViolation {
    #[serde(default)]
    field: String,
}

#[derive(Deserialize)]
struct Accepted {
    #[serde(default)]
    name: Option<String>,
}

/// The verdict on `answer`, received at `now`.
pub(crate) fn classify(answer: &Answer, now: SystemTime) -> Verdict {
    let status = answer.status;
    if status.is_success() {
        let id = serde_json::from_slice::<Accepted>(&answer.body)
            .ok()
            .and_then(|a| a.name);
        return Verdict::Done(Outcome::Accepted { id });
    }
    let error = serde_json::from_slice::<ErrorAnswer>(&answer.body)
        .unwrap_or_default()
        .error;
    let fcm_code = error
        .details
        .iter()
        .find(|d| d.kind.ends_with("google.firebase.fcm.v1.FcmError"))
        .map(|d| d.error_code.as_str())
        .filter(|code| !code.is_empty());
    let code = fcm_code.unwrap_or(&error.status);
    let reason = format!("FCM {} {code}: {}", status.as_u16(), error.message);
    let about_token = error.details.iter().any(|d| {
        d.field_violations
            .iter()
            .any(|v| v.field == "message.token")
    }) || error
        .message
        .to_ascii_lowercase()
        .contains("registration token");
    let outcome = match status {
        StatusCode::NOT_FOUND => Outcome::DeadToken { reason },
        _ if code == "UNREGISTERED" => Outcome::DeadToken { reason },
        StatusCode::BAD_REQUEST if about_token => Outcome::DeadToken { reason },
        StatusCode::UNAUTHORIZED if code == "THIRD_PARTY_AUTH_ERROR" => {
            Outcome::Misconfigured { reason }
        }
        StatusCode::UNAUTHORIZED => return Verdict::Unauthenticated(reason),
        StatusCode::FORBIDDEN => Outcome::Misconfigured { reason },
        StatusCode::TOO_MANY_REQUESTS => Outcome::RetryLater {
            after: retry_after(&answer.headers, now),
            reason,
        },
        s if s.is_server_error() => Outcome::RetryLater {
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

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: Bytes::from(body.to_owned()),
        }
    }

    fn error(code: u16, status: &str, fcm: &str, message: &str) -> String {
        serde_json::json!({"error": {"code": code, "message": message, "status": status, "details": [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": fcm}
        ]}})
        .to_string()
    }

    fn outcome(answer: &Answer) -> Outcome {
        match classify(answer, SystemTime::UNIX_EPOCH) {
            Verdict::Done(outcome) => outcome,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn accepted_with_the_message_name() {
        assert_eq!(
            outcome(&answer(200, r#"{"name": "projects/p/messages/0:1"}"#)),
            Outcome::Accepted {
                id: Some("projects/p/messages/0:1".into())
            }
        );
    }

    #[test]
    fn an_invalid_argument_is_a_dead_token_only_when_about_the_token() {
        let by_field = serde_json::json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
            "message": "Invalid value", "details": [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"},
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "message.token", "description": "Invalid registration token"}]}
        ]}}).to_string();
        assert!(matches!(
            outcome(&answer(400, &by_field)),
            Outcome::DeadToken { .. }
        ));
        let by_message = error(
            400,
            "INVALID_ARGUMENT",
            "INVALID_ARGUMENT",
            "The registration token is not a valid FCM registration token",
        );
        assert!(matches!(
            outcome(&answer(400, &by_message)),
            Outcome::DeadToken { .. }
        ));
        let payload = error(
            400,
            "INVALID_ARGUMENT",
            "INVALID_ARGUMENT",
            "Invalid value at 'message.android.ttl'",
        );
        assert!(matches!(
            outcome(&answer(400, &payload)),
            Outcome::Rejected { .. }
        ));
    }

    #[test]
    fn unauthenticated_then_misconfigured() {
        let refused = error(
            401,
            "UNAUTHENTICATED",
            "",
            "Request had invalid authentication credentials.",
        );
        assert!(matches!(
            classify(&answer(401, &refused), SystemTime::UNIX_EPOCH),
            Verdict::Unauthenticated(_)
        ));
        let apns = error(
            401,
            "UNAUTHENTICATED",
            "THIRD_PARTY_AUTH_ERROR",
            "Auth error from APNS",
        );
        assert!(matches!(
            outcome(&answer(401, &apns)),
            Outcome::Misconfigured { .. }
        ));
        let mismatch = error(
            403,
            "PERMISSION_DENIED",
            "SENDER_ID_MISMATCH",
            "SenderId mismatch",
        );
        assert!(matches!(
            outcome(&answer(403, &mismatch)),
            Outcome::Misconfigured { .. }
        ));
    }

    #[test]
    fn retry_after_is_read_from_a_429_and_a_503() {
        for status in [429, 503, 500] {
            let mut a = answer(status, "");
            a.headers
                .insert(http::header::RETRY_AFTER, "30".parse().unwrap());
            assert_eq!(
                outcome(&a),
                Outcome::RetryLater {
                    after: Some(Duration::from_secs(30)),
                    reason: format!("FCM {status} : "),
                }
            );
        }
        assert!(matches!(
            outcome(&answer(502, "<html>")),
            Outcome::RetryLater { after: None, .. }
        ));
    }

    #[test]
    fn not_found_is_a_dead_token_even_without_a_body() {
        assert!(matches!(
            outcome(&answer(404, "")),
            Outcome::DeadToken { .. }
        ));
        let unregistered = error(
            404,
            "NOT_FOUND",
            "UNREGISTERED",
            "Requested entity was not found.",
        );
        assert_eq!(
            outcome(&answer(404, &unregistered)),
            Outcome::DeadToken {
                reason: "FCM 404 UNREGISTERED: Requested entity was not found.".into()
            }
        );
        assert!(matches!(
            outcome(&answer(413, "")),
            Outcome::Rejected { .. }
        ));
    }
}
