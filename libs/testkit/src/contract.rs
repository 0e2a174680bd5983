//! [`store_contract!`](crate::store_contract): one suite of contract cases, written once,
//! run against every backend of a store.

/// Runs one suite of async contract cases against every backend of a store: a module per
/// backend, named as the invocation names it, holding one test per case under the case's
/// own name (`memory::NAME`, `postgres::NAME`, `redis_cluster::NAME`), so a failure says
/// which case broke on which backend.
///
/// A case is an `async fn` that takes what its backend hands it (a store, two handles on
/// one store, …) and asserts; the suite writes each case once, generic over the store's
/// trait (or on a `dyn` of it). The invocation lists the backends, then the cases:
///
/// ```text
/// store_contract! {
///     stores {
///         NAME => EXPR,                   // each case gets EXPR (which may `.await`)
///         #[ATTR] NAME(ARG: TYPE) => EXPR, // the test's own attribute and arguments
///         NAME => |run| { ...; run(STORE).await; ... },  // set up, run, then clean up
///     }
///     cases in MODULE { CASE, ... }       // MODULE::CASE (MODULE beside the invocation)
///     cases { CASE, ... }                 // the invoking module's own CASE
/// }
/// ```
///
/// - A backend without an attribute is a `#[tokio::test]`. One with
///   `#[sqlx::test(migrations = "./migrations")] postgres(pool: sqlx::PgPool)` gets a
///   fresh database per test (and fails when PostgreSQL is unreachable, as a Redis
///   backend must fail when Redis is: build the store with `expect`, never skip).
/// - `|run|` binds `run` to the case: the block calls it with whatever the case takes,
///   and what follows the call (forgetting a key prefix) runs once the case has passed.
/// - Several `cases` groups may follow one another: a suite split by role keeps one
///   module per role and one invocation for all.
/// - Each generated module starts with `use super::*`, so the backends' expressions see
///   what the invoking module imports.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// /// The store under contract: a counter.
/// trait Counter {
///     fn add(&self, n: u32) -> u32;
/// }
///
/// #[derive(Default)]
/// struct Memory(Mutex<u32>);
///
/// impl Counter for Memory {
///     fn add(&self, n: u32) -> u32 {
///         let mut total = self.0.lock().unwrap();
///         *total += n;
///         *total
///     }
/// }
///
/// impl Counter for Arc<Memory> {
///     fn add(&self, n: u32) -> u32 {
///         Memory::add(self, n)
///     }
/// }
///
/// /// The cases, written once for every backend.
/// mod cases {
///     use super::Counter;
///
///     pub(super) async fn adding_accumulates(store: impl Counter) {
///         assert_eq!(store.add(2), 2);
///         assert_eq!(store.add(3), 5);
///     }
/// }
///
/// async fn nothing_added_is_zero(store: impl Counter) {
///     assert_eq!(store.add(0), 0);
/// }
///
/// basra_testkit::store_contract! {
///     stores {
///         memory => Memory::default(),
///         #[tokio::test(flavor = "multi_thread")]
///         shared => |run| {
///             let store = Arc::new(Memory::default());
///             run(Arc::clone(&store)).await;
///             assert_eq!(Arc::strong_count(&store), 1, "the case let go of its handle");
///         },
///     }
///     cases in cases { adding_accumulates }
///     cases { nothing_added_is_zero }
/// }
/// # fn main() {}
/// ```
///
/// Every case of one invocation is called the same way; cases that take two handles on
/// one store (two replicas) go in an invocation of their own, in a module of their own.
#[macro_export]
macro_rules! store_contract {
    // The entry: the backends, then the groups of cases, each with the path prefix its
    // cases are called through from inside a generated module.
    (
        stores { $($stores:tt)* }
        $( cases $(in $suite:ident)? { $($case:ident),* $(,)? } )+
    ) => {
        $crate::store_contract!(
            @stores [$( [[super:: $($suite ::)?] $($case)*] )+] $($stores)*
        );
    };

    // One backend at a time: `|run| { … }`, then `EXPR` (tried in this order: a closure
    // is an expression too).
    (@stores $cases:tt) => {};
    (@stores $cases:tt
        $(#[$attr:meta])* $name:ident $(($($param:tt)*))? => |$run:ident| $body:block
        $(, $($rest:tt)*)?
    ) => {
        $crate::store_contract!(
            @store $cases [$(#[$attr])*] $name [$($($param)*)?] $run $body
        );
        $crate::store_contract!(@stores $cases $($($rest)*)?);
    };
    (@stores $cases:tt
        $(#[$attr:meta])* $name:ident $(($($param:tt)*))? => $make:expr
        $(, $($rest:tt)*)?
    ) => {
        $crate::store_contract!(
            @store $cases [$(#[$attr])*] $name [$($($param)*)?] run { run($make).await; }
        );
        $crate::store_contract!(@stores $cases $($($rest)*)?);
    };

    // A backend's module: every case of every group.
    (@store [$([$prefix:tt $($case:ident)*])*] $attrs:tt $name:ident $params:tt
        $run:ident $body:block
    ) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $($(
                $crate::store_contract!(@case $attrs $params $run $body $prefix $case);
            )*)*
        }
    };

    // One test: the backend's attribute (`#[tokio::test]` when it names none).
    (@case [] $params:tt $run:ident $body:block $prefix:tt $case:ident) => {
        $crate::store_contract!(@case [#[tokio::test]] $params $run $body $prefix $case);
    };
    (@case [$(#[$attr:meta])+] [$($param:tt)*] $run:ident $body:block
        [$($prefix:tt)*] $case:ident
    ) => {
        $(#[$attr])+
        async fn $case($($param)*) {
            let $run = $($prefix)* $case;
            $body
        }
    };
}
