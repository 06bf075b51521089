//! [`FileHandle`]: the pidfs export format (`name_to_handle_at` on a pidfd).

use uproc_abi::Errno;

/// A pidfs file handle: 8 bytes, the little-endian inode number, type `FILEID_KERNFS`.
///
/// ```
/// use uproc_pidfs::FileHandle;
/// let h = FileHandle::from_bytes(FileHandle::TYPE_KERNFS, &7u64.to_le_bytes()).unwrap();
/// assert_eq!(h.ino(), 7);
/// assert_eq!(h.to_bytes(), 7u64.to_le_bytes());
/// ```
///
/// # References
/// `pidfs_encode_fh` / `pidfs_fh_to_dentry` in `fs/pidfs.c`;
/// [open_by_handle_at(2)](https://man7.org/linux/man-pages/man2/open_by_handle_at.2.html).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileHandle {
    ino: u64,
}

impl FileHandle {
    /// `FILEID_KERNFS`, the handle type pidfs encodes.
    pub const TYPE_KERNFS: i32 = 0xfe;

    pub(crate) fn new(ino: u64) -> FileHandle {
        FileHandle { ino }
    }

    /// The inode number the handle names (0 for a handle that names no pid).
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The handle type (always [`FileHandle::TYPE_KERNFS`]).
    pub fn handle_type(&self) -> i32 {
        Self::TYPE_KERNFS
    }

    /// The 8 handle bytes (`f_handle`), little-endian.
    pub fn to_bytes(&self) -> [u8; 8] {
        self.ino.to_le_bytes()
    }

    /// `MAX_HANDLE_SZ`: the longest handle `open_by_handle_at` takes.
    pub const MAX_BYTES: usize = 128;

    /// Decodes a handle as userspace passed it, with `open_by_handle_at`'s checks
    /// (`handle_to_path`, then `pidfs_fh_to_dentry`; measured on Linux 6.18):
    ///
    /// - no bytes, more than [`MAX_BYTES`](Self::MAX_BYTES), a negative type, or flag
    ///   bits in the type's high half other than `FILEID_IS_CONNECTABLE` and
    ///   `FILEID_IS_DIR` -> EINVAL;
    /// - anything else is a handle. One that names no pid (a type other than
    ///   `FILEID_KERNFS` once those flags are masked off, fewer than 8 bytes, inode
    ///   number 0) decodes to inode 0, which no pid has: opening it is ESTALE, after the
    ///   open flags are checked, as Linux's decode returns nothing there. Bytes after the
    ///   eighth are ignored (the kernel reads the first two words).
    pub fn from_bytes(handle_type: i32, bytes: &[u8]) -> Result<FileHandle, Errno> {
        /// `FILEID_USER_FLAGS_MASK` and the flags allowed in it.
        const USER_FLAGS: u32 = 0xffff_0000;
        const VALID_USER_FLAGS: u32 = 0x0001_0000 | 0x0002_0000;
        if bytes.is_empty() || bytes.len() > Self::MAX_BYTES {
            return Err(Errno::EINVAL);
        }
        let Ok(raw_type) = u32::try_from(handle_type) else {
            return Err(Errno::EINVAL);
        };
        if raw_type & USER_FLAGS & !VALID_USER_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let ino = match bytes.first_chunk::<8>() {
            Some(b) if raw_type & !USER_FLAGS == Self::TYPE_KERNFS as u32 => u64::from_le_bytes(*b),
            _ => 0,
        };
        Ok(FileHandle { ino })
    }
}
