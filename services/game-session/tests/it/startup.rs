//! A replica's assembly refuses a setting it cannot use before it serves anything, with
//! the one error kind every service answers for a bad setting.

use basra_platform::config::ConfigError;
use game_session::{App, GameError, Settings};

#[tokio::test]
async fn a_setting_the_replica_cannot_use_is_a_settings_error_naming_it() {
    // The embedded defaults trust no key: a replica must be told whose tokens to accept.
    let settings = Settings::from_env([("BASRA_REDIS__URL".to_owned(), "memory".to_owned())])
        .expect("the settings load");
    let err = App::build(settings).await.unwrap_err();
    let GameError::Settings(ConfigError::Invalid(message)) = &err else {
        panic!("not a settings error: {err:?}");
    };
    assert!(message.starts_with("auth.trusted_keys: "), "{message}");
    assert_eq!(
        err.to_string(),
        format!("invalid settings: {message}"),
        "what main prints"
    );
}
