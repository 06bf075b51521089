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

    /// The inode number the handle names.
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

    /// Decodes a handle as userspace passed it: a type other than `FILEID_KERNFS`, a
    /// length other than 8 or inode number 0 ("never published") -> EINVAL.
    pub fn from_bytes(handle_type: i32, bytes: &[u8]) -> Result<FileHandle, Errno> {
        if handle_type != Self::TYPE_KERNFS {
            return Err(Errno::EINVAL);
        }
        let raw: [u8; 8] = bytes.try_into().map_err(|_| Errno::EINVAL)?;
        match u64::from_le_bytes(raw) {
            0 => Err(Errno::EINVAL),
            ino => Ok(FileHandle { ino }),
        }
    }
}
