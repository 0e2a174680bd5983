//! RegisterPushToken and RemovePushToken: the devices a player's pushes go to
//! (`store::Pushes`); Logout removes one too (`sign_in.rs`).

use basra_platform::auth::Caller;
use basra_proto::basra::accounts::v1 as pb;
use basra_push::Platform;

use super::AccountsApi;
use crate::error::{AccountsError, Result};
use crate::push::plan::MAX_UTC_OFFSET_MINUTES;
use crate::store::Store;
use crate::store::pushes::PushDevice;

/// The longest push token accepted, in bytes (FCM's are about 160, APNs's 64 hex digits).
pub const MAX_PUSH_TOKEN_BYTES: usize = 4096;
/// The longest app id (package name, bundle id).
const MAX_APP_ID_CHARS: usize = 255;
/// The longest locale tag.
const MAX_LOCALE_CHARS: usize = 35;
/// The longest app version.
const MAX_APP_VERSION_CHARS: usize = 64;

/// `token` as a push token: `Err` naming `field` when it is empty or too long.
pub(super) fn check_push_token(field: &'static str, token: &str) -> Result<()> {
    if token.is_empty() || token.len() > MAX_PUSH_TOKEN_BYTES {
        return Err(AccountsError::invalid(
            field,
            format!("must be 1 to {MAX_PUSH_TOKEN_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// The device a RegisterPushToken request describes, checked.
fn device(req: pb::RegisterPushTokenRequest) -> Result<PushDevice> {
    let platform = match pb::PushPlatform::try_from(req.platform) {
        Ok(pb::PushPlatform::Fcm) => Platform::Fcm,
        Ok(pb::PushPlatform::Apns) => Platform::Apns,
        _ => {
            return Err(AccountsError::invalid(
                "platform",
                "must be PUSH_PLATFORM_FCM or PUSH_PLATFORM_APNS",
            ));
        }
    };
    check_push_token("token", &req.token)?;
    if platform == Platform::Apns
        && (!(64..=200).contains(&req.token.len())
            || !req.token.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(AccountsError::invalid(
            "token",
            "an APNs device token is 64 to 200 hexadecimal digits",
        ));
    }
    let app_id_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if req.app_id.is_empty()
        || req.app_id.chars().count() > MAX_APP_ID_CHARS
        || !req.app_id.chars().all(app_id_ok)
    {
        return Err(AccountsError::invalid(
            "app_id",
            format!(
                "must be the package name or bundle id: 1 to {MAX_APP_ID_CHARS} letters, digits, `.`, `_` and `-`"
            ),
        ));
    }
    let locale_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if req.locale.chars().count() > MAX_LOCALE_CHARS
        || !req.locale.chars().all(locale_ok)
        || req.locale.starts_with(['-', '_', '.'])
    {
        return Err(AccountsError::invalid(
            "locale",
            format!(
                "must be a language tag (`ar-EG`, `en_US`) of at most {MAX_LOCALE_CHARS} characters"
            ),
        ));
    }
    if req.app_version.chars().count() > MAX_APP_VERSION_CHARS
        || req.app_version.chars().any(char::is_control)
    {
        return Err(AccountsError::invalid(
            "app_version",
            format!("must be at most {MAX_APP_VERSION_CHARS} characters, none a control"),
        ));
    }
    if !(-MAX_UTC_OFFSET_MINUTES..=MAX_UTC_OFFSET_MINUTES).contains(&req.utc_offset_minutes) {
        return Err(AccountsError::invalid(
            "utc_offset_minutes",
            format!("must be within ±{MAX_UTC_OFFSET_MINUTES} minutes"),
        ));
    }
    Ok(PushDevice {
        token: req.token,
        platform,
        app_id: req.app_id,
        locale: if req.locale.is_empty() {
            "en".to_owned()
        } else {
            req.locale
        },
        app_version: req.app_version,
        utc_offset_minutes: req.utc_offset_minutes,
        registered_at: crate::domain::now(),
    })
}

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_register_push_token(
        &self,
        caller: Caller,
        req: pb::RegisterPushTokenRequest,
    ) -> Result<pb::RegisterPushTokenResponse> {
        let device = device(req)?;
        let moved = self
            .inner
            .store
            .register_push_device(caller.user_id, device)
            .await?;
        if moved {
            tracing::info!(user_id = %caller.user_id, "a push token moved to another account");
        }
        Ok(pb::RegisterPushTokenResponse { moved })
    }

    pub(super) async fn do_remove_push_token(
        &self,
        caller: Caller,
        req: pb::RemovePushTokenRequest,
    ) -> Result<pb::RemovePushTokenResponse> {
        check_push_token("token", &req.token)?;
        let removed = self
            .inner
            .store
            .remove_push_device(caller.user_id, &req.token)
            .await?;
        Ok(pb::RemovePushTokenResponse { removed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> pb::RegisterPushTokenRequest {
        pb::RegisterPushTokenRequest {
            platform: pb::PushPlatform::Apns as i32,
            token: "ab".repeat(32),
            app_id: "online.basra.app".into(),
            locale: "ar-EG".into(),
            app_version: "2.4.1 (311)".into(),
            utc_offset_minutes: 120,
        }
    }

    type Change = Box<dyn Fn(&mut pb::RegisterPushTokenRequest)>;

    #[test]
    fn each_field_is_checked_and_named() {
        assert!(device(request()).is_ok());
        let cases: Vec<(&str, Change)> = vec![
            ("platform", Box::new(|r| r.platform = 0)),
            ("token", Box::new(|r| r.token.clear())),
            ("token", Box::new(|r| r.token = "xyz".repeat(30))),
            ("token", Box::new(|r| r.token = "ab".repeat(16))),
            ("app_id", Box::new(|r| r.app_id.clear())),
            ("app_id", Box::new(|r| r.app_id = "online basra".into())),
            ("locale", Box::new(|r| r.locale = "ar EG".into())),
            ("locale", Box::new(|r| r.locale = "a".repeat(36))),
            ("app_version", Box::new(|r| r.app_version = "1\n2".into())),
            (
                "utc_offset_minutes",
                Box::new(|r| r.utc_offset_minutes = 841),
            ),
        ];
        for (field, change) in cases {
            let mut r = request();
            change(&mut r);
            match device(r) {
                Err(AccountsError::InvalidArgument { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        // FCM tokens are not hexadecimal; an empty locale is English.
        let mut r = request();
        r.platform = pb::PushPlatform::Fcm as i32;
        r.token = "fcm:APA91b-token_1".into();
        r.locale.clear();
        assert_eq!(device(r).unwrap().locale, "en");
    }
}
