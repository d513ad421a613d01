//! Giving back the pages of the binary's relocation table once the loader has applied it.
//!
//! A position-independent binary carries a 24-byte record per pointer in its read-only data
//! (vtables, string tables): about 39,000 of them, 0.9 MiB, which the loader reads once at
//! start and nothing reads again. Where the C library's loader reads packed relocations
//! (glibc 2.36 and later), build.rs links them packed (15 KB). A binary for older machines (a
//! release's: glibc 2.17 and newer, or static musl) cannot be, and its table stays resident
//! for the whole run, part of every peak. [`release`] drops those pages from the process: they
//! are clean pages of a read-only file mapping, so the kernel reads them back from the file if
//! anything ever touches them again. Nothing is written; only whole pages inside the table are
//! given back; anything unexpected (no table, a writable segment, an address outside the
//! binary) and nothing is done.

use std::ffi::c_int;

/// `PT_LOAD`, `PT_DYNAMIC`, `PF_W` and the dynamic tags read here (the ELF specification).
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PF_W: u32 = 2;
const DT_NULL: i64 = 0;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;

/// The main program's relocation table as the loader left it: where it is in memory and its
/// length (found inside a segment mapped without write permission).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    pub start: usize,
    pub len: usize,
}

/// A program header and the dynamic section's entries, as read from memory: the fields the
/// search needs, so that it is a pure function tests can feed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub kind: u32,
    pub flags: u32,
    pub vaddr: usize,
    pub memsz: usize,
}

/// Where the relocation table is, given the load bias, the program headers and the dynamic
/// section's `(tag, value)` entries. glibc rewrites `DT_RELA` in place to an absolute address
/// and musl does not, so a value at or above the bias is taken as already absolute.
pub(crate) fn locate(bias: usize, segments: &[Segment], dynamic: &[(i64, u64)]) -> Option<Table> {
    let find = |tag| dynamic.iter().find(|(t, _)| *t == tag).map(|(_, v)| *v);
    let (rela, len) = (find(DT_RELA)?, find(DT_RELASZ)?);
    let (rela, len) = (usize::try_from(rela).ok()?, usize::try_from(len).ok()?);
    let start = if bias > 0 && rela >= bias {
        rela
    } else {
        bias.checked_add(rela)?
    };
    let end = start.checked_add(len)?;
    let inside = segments.iter().any(|s| {
        let from = bias.saturating_add(s.vaddr);
        s.kind == PT_LOAD
            && s.flags & PF_W == 0
            && from <= start
            && end <= from.saturating_add(s.memsz)
    });
    (inside && len > 0).then_some(Table { start, len })
}

/// The whole pages inside `table`, for `page` a power of two: `(start, len)`, or `None` when
/// the table does not cover one.
pub(crate) fn whole_pages(table: Table, page: usize) -> Option<(usize, usize)> {
    let start = table.start.checked_add(page - 1)? & !(page - 1);
    let end = (table.start + table.len) & !(page - 1);
    (end > start).then(|| (start, end - start))
}

/// Gives the main program's relocation table back to the kernel. Returns the bytes given
/// back (0 when there was nothing to give: a packed table, a static binary without one).
/// Call once, at the start of `main`: any time after the loader is done is correct.
pub fn release() -> usize {
    let Some(table) = main_program() else {
        return 0;
    };
    // SAFETY: sysconf reads a constant of the system.
    #[allow(unsafe_code)]
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let Some((start, len)) = usize::try_from(page)
        .ok()
        .filter(|p| p.is_power_of_two())
        .and_then(|page| whole_pages(table, page))
    else {
        return 0;
    };
    // SAFETY: [start, start + len) is whole pages of a segment of the main program mapped
    // without write permission (checked in `locate`): clean pages of the file, which
    // MADV_DONTNEED unmaps and a later access reads back from the file. No Rust reference
    // points into the relocation table.
    #[allow(unsafe_code)]
    let done = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_DONTNEED) };
    if done == 0 { len } else { 0 }
}

/// The main program's table, read through `dl_iterate_phdr` (whose first entry is the main
/// program, with glibc and with musl, static or not).
fn main_program() -> Option<Table> {
    let mut found: Option<Table> = None;
    // SAFETY: the callback only reads the program headers and dynamic section the loader
    // describes, for the duration of the call, and writes `found` through the pointer passed
    // here, which outlives the call.
    #[allow(unsafe_code)]
    unsafe {
        libc::dl_iterate_phdr(Some(first), (&raw mut found).cast());
    }
    found
}

/// An entry of the dynamic section (`ElfN_Dyn`: both fields the size of a pointer).
#[repr(C)]
struct Dyn {
    tag: isize,
    val: usize,
}

#[allow(unsafe_code)]
unsafe extern "C" fn first(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> c_int {
    // SAFETY: the loader passes a valid `dl_phdr_info` whose `dlpi_phdr` points to
    // `dlpi_phnum` program headers, and `data` is `main_program`'s `found`.
    unsafe {
        let info = &*info;
        let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
        let bias = info.dlpi_addr as usize;
        let segments: Vec<Segment> = phdrs
            .iter()
            .map(|p| Segment {
                kind: p.p_type,
                flags: p.p_flags,
                vaddr: p.p_vaddr as usize,
                memsz: p.p_memsz as usize,
            })
            .collect();
        let mut dynamic = Vec::new();
        if let Some(d) = segments.iter().find(|s| s.kind == PT_DYNAMIC) {
            let mut entry = bias.wrapping_add(d.vaddr) as *const Dyn;
            let end = bias.wrapping_add(d.vaddr).wrapping_add(d.memsz);
            while (entry as usize) < end && (*entry).tag as i64 != DT_NULL {
                dynamic.push(((*entry).tag as i64, (*entry).val as u64));
                entry = entry.add(1);
            }
        }
        *data.cast::<Option<Table>>() = locate(bias, &segments, &dynamic);
    }
    // Only the first object: the main program.
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Segment = Segment {
        kind: PT_LOAD,
        flags: 4,
        vaddr: 0,
        memsz: 0x5000,
    };
    const RW: Segment = Segment {
        kind: PT_LOAD,
        flags: 6,
        vaddr: 0x8000,
        memsz: 0x4000,
    };

    #[test]
    fn the_table_is_found_relative_or_already_relocated_and_only_in_a_read_only_segment() {
        let bias = 0x5555_0000_0000;
        let rel = [(DT_RELA, 0x1000), (DT_RELASZ, 0x2800)];
        let want = Some(Table {
            start: bias + 0x1000,
            len: 0x2800,
        });
        // musl leaves the address relative; glibc has added the bias.
        assert_eq!(locate(bias, &[R, RW], &rel), want);
        let abs = [(DT_RELA, (bias + 0x1000) as u64), (DT_RELASZ, 0x2800)];
        assert_eq!(locate(bias, &[R, RW], &abs), want);
        // A non-PIE binary: no bias.
        assert_eq!(
            locate(0, &[R], &rel),
            Some(Table {
                start: 0x1000,
                len: 0x2800
            })
        );
        // In a writable segment, past its end, or with no table: left alone.
        assert_eq!(
            locate(bias, &[R, RW], &[(DT_RELA, 0x8000), (DT_RELASZ, 0x100)]),
            None
        );
        assert_eq!(
            locate(bias, &[R], &[(DT_RELA, 0x4000), (DT_RELASZ, 0x2000)]),
            None
        );
        assert_eq!(locate(bias, &[R], &[(DT_RELASZ, 0x100)]), None);
        assert_eq!(
            locate(bias, &[R], &[(DT_RELA, 0x1000), (DT_RELASZ, 0)]),
            None
        );
    }

    #[test]
    fn only_whole_pages_inside_the_table_are_given_back() {
        let page = 0x1000;
        let table = |start, len| Table { start, len };
        assert_eq!(
            whole_pages(table(0x1000, 0x3000), page),
            Some((0x1000, 0x3000))
        );
        // The pages it shares with its neighbours stay.
        assert_eq!(
            whole_pages(table(0x10ff, 0x3000), page),
            Some((0x2000, 0x2000))
        );
        assert_eq!(whole_pages(table(0x10ff, 0xf01), page), None);
        assert_eq!(whole_pages(table(0x1800, 0x1000), page), None);
    }

    /// The test binary is linked without packed relocations (build.rs packs only the `rounds`
    /// binary's), so it has a table of its own: found, given back, and the program goes on,
    /// its relocated pointers intact.
    #[test]
    fn this_test_binarys_table_is_found_and_given_back_and_everything_still_works() {
        let table = main_program().expect("the test binary has a relocation table");
        assert!(table.len > 4096, "{table:?}");
        let last = table.start + table.len - 1;
        // SAFETY: inside the table, which `locate` found in a mapped read-only segment.
        #[allow(unsafe_code)]
        let read = || unsafe { std::ptr::read_volatile(last as *const u8) };
        let byte = read();
        let before = resident_kib(table.start);
        let given = release();
        assert!(given > 0 && given <= table.len, "{given} of {table:?}");
        let after = resident_kib(table.start);
        assert!(
            after + given / 1024 <= before + 4,
            "Rss of the mapping: {before} KiB before, {after} KiB after giving {given} bytes"
        );
        // Pointers the loader relocated still point where they should.
        let words: &[&str] = std::hint::black_box(&["packed", "relative", "relocations"]);
        assert_eq!(words.concat().len(), 25);
        // And the table reads back from the file, as it was.
        assert_eq!(read(), byte);
        assert_eq!(main_program(), Some(table));
    }

    /// `Rss:` of the mapping of /proc/self/smaps that holds `address`, in KiB.
    fn resident_kib(address: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((from, to)) = range.split_once('-')
                && let (Ok(from), Ok(to)) = (
                    usize::from_str_radix(from, 16),
                    usize::from_str_radix(to, 16),
                )
            {
                inside = from <= address && address < to;
            } else if inside && let Some(kib) = line.strip_prefix("Rss:") {
                return kib
                    .trim()
                    .trim_end_matches(" kB")
                    .trim()
                    .parse()
                    .unwrap_or(0);
            }
        }
        0
    }
}
