//! Reads one string-array key from a GGUF file's header: the languages an embedding model
//! declares (`general.languages`, which llama.cpp's converter fills from the model card).
//!
//! llama.cpp keeps only a model's scalar keys (arrays are skipped when it loads), llama-cpp-2's
//! `GgufContext` has no array getter, and the workspace denies `unsafe`; the GGUF crates either
//! pull a command line's dependencies (gguf-rs: clap, crossterm) or parse the tensor table with a
//! fixed list of tensor types that fails on newer ones (gguf 0.1). So this reads the key/value
//! section of the format (GGUF v2 and v3, little-endian) itself, skipping every other value
//! without keeping it, and stops before the tensor table.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

const MAGIC: &[u8; 4] = b"GGUF";
/// Value types of the format, by their numbers.
const STRING: u32 = 8;
const ARRAY: u32 = 9;
/// Longest string a key or value may be: the header of a real model holds nothing near it, so
/// a larger length means a damaged file, not an allocation to attempt.
const MAX_STRING: u64 = 1 << 20;

/// The strings of `key` in the GGUF at `path`, or `None` when the file has no such key (or holds
/// something else under it). A file that is not GGUF v2 or v3 is an error.
pub fn string_array(path: &Path, key: &str) -> io::Result<Option<Vec<String>>> {
    let mut r = BufReader::new(File::open(path)?);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(bad("not a GGUF file"));
    }
    let version = read_u32(&mut r)?;
    if !(2..=3).contains(&version) {
        return Err(bad(&format!("GGUF version {version} is not read")));
    }
    let _tensors = read_u64(&mut r)?;
    let kv_count = read_u64(&mut r)?;
    for _ in 0..kv_count {
        let name = read_string(&mut r)?;
        let kind = read_u32(&mut r)?;
        if name != key {
            skip_value(&mut r, kind)?;
            continue;
        }
        if kind != ARRAY || read_u32(&mut r)? != STRING {
            return Ok(None);
        }
        let n = read_u64(&mut r)?;
        let mut values = Vec::new();
        for _ in 0..n {
            values.push(read_string(&mut r)?);
        }
        return Ok(Some(values));
    }
    Ok(None)
}

/// Moves past one value of type `kind`.
fn skip_value(r: &mut BufReader<File>, kind: u32) -> io::Result<()> {
    if kind == STRING {
        let len = read_u64(r)?;
        return r.seek_relative(string_len(len)?);
    }
    if kind == ARRAY {
        let element = read_u32(r)?;
        let n = read_u64(r)?;
        if let Some(size) = scalar_size(element) {
            let bytes = n
                .checked_mul(size)
                .and_then(|b| i64::try_from(b).ok())
                .ok_or_else(|| bad("an array's length overflows"))?;
            return r.seek_relative(bytes);
        }
        for _ in 0..n {
            skip_value(r, element)?;
        }
        return Ok(());
    }
    let size = scalar_size(kind).ok_or_else(|| bad(&format!("unknown value type {kind}")))?;
    r.seek_relative(size as i64)
}

/// Bytes of a fixed-size value type; `None` for strings, arrays and unknown types.
fn scalar_size(kind: u32) -> Option<u64> {
    match kind {
        0 | 1 | 7 => Some(1), // u8, i8, bool
        2 | 3 => Some(2),     // u16, i16
        4..=6 => Some(4),     // u32, i32, f32
        10..=12 => Some(8),   // u64, i64, f64
        _ => None,
    }
}

fn read_string(r: &mut BufReader<File>) -> io::Result<String> {
    let len = read_u64(r)?;
    let mut bytes = vec![0u8; string_len(len)? as usize];
    r.read_exact(&mut bytes)?;
    String::from_utf8(bytes).map_err(|_| bad("a string is not UTF-8"))
}

fn string_len(len: u64) -> io::Result<i64> {
    if len > MAX_STRING {
        return Err(bad("a string is longer than any header holds"));
    }
    Ok(len as i64)
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF v3 header with the given key/value section (already encoded) and no tensors.
    fn gguf(kvs: &[Vec<u8>]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend((kvs.len() as u64).to_le_bytes());
        for kv in kvs {
            out.extend(kv);
        }
        out
    }

    fn string(s: &str) -> Vec<u8> {
        let mut out = (s.len() as u64).to_le_bytes().to_vec();
        out.extend(s.as_bytes());
        out
    }

    fn kv(key: &str, kind: u32, value: Vec<u8>) -> Vec<u8> {
        let mut out = string(key);
        out.extend(kind.to_le_bytes());
        out.extend(value);
        out
    }

    fn strings(items: &[&str]) -> Vec<u8> {
        let mut out = STRING.to_le_bytes().to_vec();
        out.extend((items.len() as u64).to_le_bytes());
        for s in items {
            out.extend(string(s));
        }
        out
    }

    fn read(bytes: &[u8], key: &str) -> io::Result<Option<Vec<String>>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, bytes).unwrap();
        string_array(&path, key)
    }

    #[test]
    fn finds_a_string_array_after_values_of_every_kind() {
        let mut floats = 6u32.to_le_bytes().to_vec();
        floats.extend(3u64.to_le_bytes());
        floats.extend([0u8; 12]);
        let mut nested = ARRAY.to_le_bytes().to_vec();
        nested.extend(1u64.to_le_bytes());
        nested.extend(strings(&["x", "yz"]));
        let file = gguf(&[
            kv("general.architecture", STRING, string("bert")),
            kv("bert.block_count", 4, 6u32.to_le_bytes().to_vec()),
            kv("flag", 7, vec![1]),
            kv("big", 10, 7u64.to_le_bytes().to_vec()),
            kv("tokenizer.ggml.scores", ARRAY, floats),
            kv(
                "tokenizer.ggml.tokens",
                ARRAY,
                strings(&["[PAD]", "語", "hello"]),
            ),
            kv("nested", ARRAY, nested),
            kv("general.languages", ARRAY, strings(&["en", "zh"])),
        ]);
        assert_eq!(
            read(&file, "general.languages").unwrap(),
            Some(vec!["en".to_string(), "zh".to_string()])
        );
        assert_eq!(read(&file, "general.missing").unwrap(), None);
        // A key holding something other than strings is not an answer.
        assert_eq!(read(&file, "bert.block_count").unwrap(), None);
    }

    #[test]
    fn damaged_and_foreign_files_are_errors() {
        assert!(read(b"GGML\x03\0\0\0", "k").is_err());
        let mut v1 = MAGIC.to_vec();
        v1.extend(1u32.to_le_bytes());
        assert!(read(&v1, "k").is_err());
        let mut truncated = gguf(&[kv("general.languages", ARRAY, strings(&["en"]))]);
        truncated.truncate(truncated.len() - 1);
        assert!(read(&truncated, "general.languages").is_err());
        let mut huge = gguf(&[]);
        huge[16..24].copy_from_slice(&1u64.to_le_bytes());
        huge.extend(u64::MAX.to_le_bytes());
        assert!(read(&huge, "k").is_err());
    }
}
