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

/// A rolled-back pod started with `database.migrate` meets a migration of a newer release
/// it does not know: it migrates (nothing to apply) and serves, where sqlx by default
/// refuses (the migration policy, deploy/README.md).
#[sqlx::test(migrations = "./migrations")]
async fn a_newer_releases_migration_does_not_stop_an_older_release(pool: sqlx::PgPool) {
    sqlx::query("ALTER TABLE users ADD COLUMN added_by_a_newer_release text")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99991231000001, 'a newer release', true, '\\x00', 1)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let refused = accounts::store::MIGRATOR.run(&pool).await.unwrap_err();
    assert!(
        matches!(
            refused,
            sqlx::migrate::MigrateError::VersionMissing(99991231000001)
        ),
        "{refused:?}"
    );
    accounts::PgStore::new(pool.clone())
        .migrate()
        .await
        .expect("the older release's migrate leaves the newer migration alone");
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(users, 0);
}
