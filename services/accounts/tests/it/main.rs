//! The integration tests of the accounts service, in one test binary: each suite is a
//! module (as separate binaries, each re-linked the whole dependency tree), with the shared
//! setup in `helpers`.

/// accounts' two stores for [`basra_testkit::store_contract!`], named once: each case runs
/// on the memory store (`memory::NAME`) and on a fresh PostgreSQL database
/// (`postgres::NAME`: `#[sqlx::test]`, which needs `DATABASE_URL` and fails when
/// PostgreSQL is unreachable). Takes `store_contract!`'s groups of cases:
/// `on_both_stores! { cases { a, b } }` runs this module's `a` and `b`,
/// `on_both_stores! { cases in contract { a } }` runs `contract::a`.
macro_rules! on_both_stores {
    ($($cases:tt)+) => {
        basra_testkit::store_contract! {
            stores {
                memory => accounts::MemoryStore::new(),
                #[sqlx::test(migrations = "./migrations")]
                postgres(pool: sqlx::PgPool) => accounts::PgStore::new(pool),
            }
            $($cases)+
        }
    };
}

mod account;
mod admin;
mod admin_lookup;
mod devices;
mod export;
mod feed;
mod grpc;
mod helpers;
mod inbox;
mod link;
mod oidc_issuer;
mod provider;
mod provider_tls;
mod push;
mod replays;
mod reports;
mod seasons;
mod social_contract;
mod startup;
mod store_contract;
