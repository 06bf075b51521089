//! User code called from inside the life cycle: signal hooks
//! (`Task::set_signal_hook`), pidfd wakers (`PidFd::readable`'s futures, an executor's
//! `Waker`), task bodies and their drops. Linux runs none of its own in those paths;
//! uproc does, and a panic there must not stop a kill, an exit or a release halfway
//! (other threads left running, a task never released, a charge never returned). Every
//! such call goes through [`contain`]: the panic ends there, the caller logs it and
//! carries on.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f`; if it panics, the panic stops here and its message comes back (for the
/// caller's log). The panic's payload is dropped, and if that drop panics in turn, the
/// second payload is forgotten (leaked): there is no one left to report it to.
///
/// The user code runs [`outside`](crate::walk::outside) any kill walk of this thread:
/// what it does acts at once, as from any caller.
pub fn contain(f: impl FnOnce()) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| crate::walk::outside(f))).map_err(|payload| {
        let msg = panic_message(&*payload).to_owned();
        if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(again);
        }
        msg
    })
}

/// The text of a panic's payload: what `panic!` was given as a `&str` or a `String`.
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic payload>")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct PanicsOnDrop;

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("drop");
        }
    }

    #[test]
    fn a_panic_is_contained_with_its_message() {
        assert_eq!(contain(|| {}), Ok(()));
        assert_eq!(contain(|| panic!("boom")), Err("boom".to_string()));
        assert_eq!(contain(|| panic!("{}", 7)), Err("7".to_string()));
        let payload = || std::panic::panic_any(PanicsOnDrop);
        assert_eq!(
            contain(payload),
            Err("<non-string panic payload>".to_string())
        );
    }
}
