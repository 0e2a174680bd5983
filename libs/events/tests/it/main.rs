//! Property tests of the event formats over random fields and random results, and worked
//! examples checked by hand.

mod arena;
mod knockout;
mod support;
mod swiss;
