//! [`Readable`]: `readable().await` on a pidfd.

use crate::state::PidState;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Completes when its pidfd is readable (the task exited or was reaped).
///
/// Its waker is registered on the one pid's state, under an id unique to this future:
/// polling again replaces that entry (never duplicates it), the exit takes and wakes
/// every entry of this pid only, and a woken future that is not ready registers again.
/// Dropping the future removes its entry. Wakers are cloned before and dropped or woken
/// after the state mutex, never under it.
///
/// # References
/// `pidfd_poll` + `poll_wait(file, &pid->wait_pidfd, pts)` in `fs/pidfs.c`.
#[must_use = "futures do nothing unless awaited"]
pub struct Readable {
    state: Arc<PidState>,
    /// The id of this future's waker entry, once registered.
    id: Option<u64>,
}

impl Readable {
    pub(crate) fn new(state: Arc<PidState>) -> Readable {
        Readable { state, id: None }
    }
}

impl Future for Readable {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let waker = cx.waker().clone();
        // Whatever waker leaves the list is dropped after the lock is released.
        let old: Option<Waker>;
        {
            let mut inner = this.state.inner.lock();
            if inner.readable() {
                old = this
                    .id
                    .take()
                    .and_then(|id| take_entry(&mut inner.wakers, id));
                drop(inner);
                drop(old);
                return Poll::Ready(());
            }
            let id = match this.id {
                Some(id) => id,
                None => {
                    let id = inner.next_waker_id;
                    inner.next_waker_id += 1;
                    this.id = Some(id);
                    id
                }
            };
            old = match inner.wakers.iter_mut().find(|(i, _)| *i == id) {
                Some((_, w)) => Some(std::mem::replace(w, waker)),
                None => {
                    inner.wakers.push((id, waker));
                    None
                }
            };
        }
        drop(old);
        Poll::Pending
    }
}

fn take_entry(wakers: &mut Vec<(u64, Waker)>, id: u64) -> Option<Waker> {
    let i = wakers.iter().position(|(x, _)| *x == id)?;
    Some(wakers.swap_remove(i).1)
}

impl Drop for Readable {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            let old = take_entry(&mut self.state.inner.lock().wakers, id);
            drop(old);
        }
    }
}

impl fmt::Debug for Readable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readable")
            .field("registered", &self.id.is_some())
            .finish_non_exhaustive()
    }
}
