//! The service refuses a setting it cannot use before it serves anything, with the one
//! error kind every service answers for a bad setting.

use accounts::AccountsError;
use basra_platform::config::ConfigError;

use crate::helpers::test_settings;

#[tokio::test]
async fn a_setting_the_service_cannot_use_is_a_settings_error_naming_it() {
    let err = accounts::migrate(&test_settings(&[("BASRA_DATABASE__URL", "memory")]))
        .await
        .unwrap_err();
    let AccountsError::Settings(ConfigError::Invalid(message)) = &err else {
        panic!("not a settings error: {err:?}");
    };
    assert!(message.starts_with("database.url"), "{message}");
    assert_eq!(err.to_string(), format!("invalid settings: {message}"));
}
