//! `Errno`: the error numbers Linux returns, with libc's values.

use core::fmt;

/// A Linux error number, as returned by the system call uproc models.
///
/// Every fallible uproc call returns `Result<_, Errno>`. The value is libc's, so it
/// converts losslessly into [`std::io::Error`] and compares with `errno` values from
/// real system calls (the differential tests rely on that).
///
/// ```
/// use uproc_abi::Errno;
/// assert_eq!(Errno::EAGAIN.name(), "EAGAIN");
/// assert_eq!(Errno::EAGAIN.to_string(), "EAGAIN: Resource temporarily unavailable");
/// let io: std::io::Error = Errno::ESRCH.into();
/// assert_eq!(io.raw_os_error(), Some(libc::ESRCH));
/// ```
///
/// # References
/// [errno(3)](https://man7.org/linux/man-pages/man3/errno.3.html)
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Errno(i32);

macro_rules! errnos {
    ($($name:ident => $msg:literal,)*) => {
        impl Errno {
            $(
                #[doc = concat!("`", stringify!($name), "`: ", $msg, ".")]
                pub const $name: Errno = Errno(libc::$name);
            )*

            /// The symbolic name (`"EAGAIN"`), or `"E?"` for a number uproc does not name.
            pub fn name(self) -> &'static str {
                match self.0 {
                    $(libc::$name => stringify!($name),)*
                    _ => "E?",
                }
            }

            /// The meaning, as `strerror(3)` words it.
            pub fn message(self) -> &'static str {
                match self.0 {
                    $(libc::$name => $msg,)*
                    _ => "Unknown error",
                }
            }
        }
    };
}

errnos! {
    EPERM => "Operation not permitted",
    ENOENT => "No such file or directory",
    ESRCH => "No such process",
    EINTR => "Interrupted system call",
    EIO => "Input/output error",
    E2BIG => "Argument list too long",
    EBADF => "Bad file descriptor",
    ECHILD => "No child processes",
    EAGAIN => "Resource temporarily unavailable",
    ENOMEM => "Cannot allocate memory",
    EACCES => "Permission denied",
    EFAULT => "Bad address",
    EBUSY => "Device or resource busy",
    EEXIST => "File exists",
    ENOTDIR => "Not a directory",
    EISDIR => "Is a directory",
    EINVAL => "Invalid argument",
    ENOSPC => "No space left on device",
    ERANGE => "Numerical result out of range",
    ENAMETOOLONG => "File name too long",
    ENOSYS => "Function not implemented",
    ENOTEMPTY => "Directory not empty",
    ENOTTY => "Inappropriate ioctl for device",
    EOPNOTSUPP => "Operation not supported",
    EREMOTE => "Object is remote",
    ESTALE => "Stale file handle",
}

impl Errno {
    /// The raw number (`libc::EAGAIN` for [`Errno::EAGAIN`]).
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// Wraps a raw number, for example one read from `errno` after a real system call.
    pub const fn from_raw(raw: i32) -> Errno {
        Errno(raw)
    }

    /// The `errno` of the calling thread after a failed libc call.
    pub fn last_os_error() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name(), self.message())
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> std::io::Error {
        std::io::Error::from_raw_os_error(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_come_from_libc() {
        assert_eq!(Errno::ECHILD.raw(), libc::ECHILD);
        assert_eq!(Errno::ECHILD.name(), "ECHILD");
        assert_eq!(Errno::EREMOTE.name(), "EREMOTE");
        assert_eq!(Errno::from_raw(9999).name(), "E?");
        assert_eq!(
            format!("{:?}", Errno::EINVAL),
            format!("EINVAL({})", libc::EINVAL)
        );
    }

    #[test]
    fn converts_into_io_error_with_same_number() {
        let e: std::io::Error = Errno::ENOSPC.into();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    }
}
