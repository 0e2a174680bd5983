//! The integration tests of the accounts service, in one test binary: each suite is a
//! module (as separate binaries, each re-linked the whole dependency tree), with the shared
//! setup in `helpers`.

/// Runs each named case once on the memory store (`memory::NAME`) and once on a fresh
/// PostgreSQL database (`postgres::NAME`): `on_both_stores!(a, b)` calls the suite's own
/// `a` and `b`, `on_both_stores!(in cases: a, b)` calls `cases::a` and `cases::b`.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        /// The cases of this suite, under a name the generated modules can call through.
        mod here {
            pub(super) use super::*;
        }
        on_both_stores!(in here: $($name),*);
    };
    (in $module:ident: $($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$module::$name(accounts::MemoryStore::new()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[sqlx::test(migrations = "./migrations")]
                async fn $name(pool: sqlx::PgPool) {
                    super::$module::$name(accounts::PgStore::new(pool)).await;
                }
            )*
        }
    };
}

mod account;
mod admin;
mod admin_lookup;
mod export;
mod feed;
mod grpc;
mod helpers;
mod link;
mod oidc_issuer;
mod provider;
mod provider_tls;
mod social_contract;
mod store_contract;
