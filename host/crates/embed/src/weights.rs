//! Reading a model's weights into tensors.
//!
//! The packed forward pass reads f32 weights straight from the mapped file
//! (no copy, no fresh memory to fault in: a 470 MB model "loads" in the time
//! it takes to parse the header). candle's tensors (the reference pass) need
//! memory of their own:
//!
//! Copying 90-470 MB of weights into freshly allocated memory faults in
//! every 4 KiB page on its own: ~122,000 page faults and ~480 ms for a model
//! of multilingual-e5-small's size (bench/README.md). Here each f32 tensor's
//! memory is allocated first and advised to use transparent huge pages
//! before the weights are copied into it, and the tensor takes that memory
//! over without another copy. Other element types go through candle's own
//! loader.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use candle_core::{Device, Tensor};

/// Tensors smaller than this are not worth a huge-page hint.
const HUGE_PAGE_MIN_BYTES: usize = 4 * 1024 * 1024;

/// The f32 values of a tensor: a range of the mapped weights file, or values
/// of its own.
pub(crate) enum Values {
    Mapped { map: Arc<memmap2::Mmap>, bytes: Range<usize> },
    Owned(Vec<f32>),
}

impl std::ops::Deref for Values {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match self {
            // `load` maps only ranges that are aligned for f32, of a whole
            // number of values, on a little-endian target.
            Values::Mapped { map, bytes } => bytemuck::cast_slice(&map[bytes.clone()]),
            Values::Owned(values) => values,
        }
    }
}

impl Values {
    /// The values as a vector of their own (a copy when mapped).
    pub(crate) fn into_vec(self) -> Vec<f32> {
        match self {
            Values::Owned(values) => values,
            mapped @ Values::Mapped { .. } => {
                let mut values = Vec::with_capacity(mapped.len());
                advise_huge_pages(&values);
                values.extend_from_slice(&mapped);
                values
            }
        }
    }
}

/// One tensor of the file: f32 values (mapped), or anything else as a
/// candle tensor.
pub(crate) enum Weight {
    F32 { shape: Vec<usize>, values: Values },
    Other(Tensor),
}

impl Weight {
    /// The tensor; f32 values are copied once into memory of their own.
    ///
    /// # Errors
    /// Values that do not fill the shape.
    pub(crate) fn into_tensor(self, device: &Device) -> candle_core::Result<Tensor> {
        match self {
            Weight::F32 { shape, values } => Tensor::from_vec(values.into_vec(), shape, device),
            Weight::Other(tensor) => Ok(tensor),
        }
    }

    /// Shape and f32 values (row-major), converting other element types.
    ///
    /// # Errors
    /// An element type candle cannot convert to f32.
    pub(crate) fn into_f32(self) -> candle_core::Result<(Vec<usize>, Values)> {
        match self {
            Weight::F32 { shape, values } => Ok((shape, values)),
            Weight::Other(tensor) => {
                let shape = tensor.dims().to_vec();
                let values = tensor.to_dtype(candle_core::DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
                Ok((shape, Values::Owned(values)))
            }
        }
    }
}

/// Every tensor of a mapped `.safetensors` file: f32 tensors as ranges of
/// the mapping (copied only where a range is not aligned for f32 or the
/// target is big-endian), others as candle tensors.
///
/// # Errors
/// A malformed file, or a tensor candle cannot build.
pub(crate) fn load(map: &Arc<memmap2::Mmap>, device: &Device) -> candle_core::Result<HashMap<String, Weight>> {
    let file = safetensors::SafeTensors::deserialize(map)?;
    let base = map.as_ptr() as usize;
    file.tensors()
        .into_iter()
        .map(|(name, view)| {
            let weight = if view.dtype() == safetensors::Dtype::F32 && device.is_cpu() {
                let data = view.data();
                let shape = view.shape().to_vec();
                if shape.iter().product::<usize>() * 4 != data.len() {
                    return Err(candle_core::Error::Msg(format!("tensor {name}: {} bytes for shape {shape:?}", data.len())));
                }
                let start = data.as_ptr() as usize - base;
                let values = if cfg!(target_endian = "little") && data.as_ptr().align_offset(std::mem::align_of::<f32>()) == 0 {
                    Values::Mapped { map: Arc::clone(map), bytes: start..start + data.len() }
                } else {
                    let mut values: Vec<f32> = Vec::with_capacity(data.len() / 4);
                    advise_huge_pages(&values);
                    values.extend(data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
                    Values::Owned(values)
                };
                Weight::F32 { shape, values }
            } else {
                Weight::Other(candle_core::safetensors::Load::load(&view, device)?)
            };
            Ok((name, weight))
        })
        .collect()
}

/// Every tensor of the file as a candle tensor (what candle's own loader
/// gives), f32 values copied once into memory of their own.
///
/// # Errors
/// As [`load`].
pub(crate) fn load_tensors(map: &Arc<memmap2::Mmap>, device: &Device) -> candle_core::Result<HashMap<String, Tensor>> {
    load(map, device)?.into_iter().map(|(name, weight)| Ok((name, weight.into_tensor(device)?))).collect()
}

/// Asks the kernel for transparent huge pages over the (still untouched)
/// capacity of `values`. Best effort; only on Linux with glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn advise_huge_pages(values: &Vec<f32>) {
    const HUGE_PAGE: usize = 2 * 1024 * 1024;
    let bytes = values.capacity() * std::mem::size_of::<f32>();
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    let begin = values.as_ptr() as usize;
    let start = begin.next_multiple_of(HUGE_PAGE);
    let end = (begin + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside this vector's own allocation and
        // is page-aligned; MADV_HUGEPAGE is advice about how to back those
        // pages and never changes their contents.
        let _ = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn advise_huge_pages(_values: &Vec<f32>) {}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::DType;

    #[test]
    fn tensors_match_candles_own_loader() {
        let device = Device::Cpu;
        let big: Vec<f32> = (0..(1 << 21)).map(|i| (i % 1000) as f32 * 0.25 - 3.0).collect(); // 8 MiB: huge-page path
        let mut tensors = HashMap::new();
        tensors.insert("big".to_string(), Tensor::from_vec(big, (2048, 1024), &device).unwrap());
        tensors.insert("small".to_string(), Tensor::new(&[[1.5f32, -2.0], [0.0, 7.25]], &device).unwrap());
        tensors.insert("half".to_string(), Tensor::new(&[1.0f32, 2.0, 3.0], &device).unwrap().to_dtype(DType::F16).unwrap());
        tensors.insert("ids".to_string(), Tensor::new(&[3i64, 1, 4], &device).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        candle_core::safetensors::save(&tensors, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // SAFETY: a test's own temporary file, not modified while mapped.
        #[allow(unsafe_code)]
        let map = Arc::new(unsafe { memmap2::Mmap::map(&std::fs::File::open(&path).unwrap()) }.unwrap());

        let ours = load_tensors(&map, &device).unwrap();
        let candles = candle_core::safetensors::load_buffer(&bytes, &device).unwrap();
        assert_eq!(ours.len(), candles.len());
        for (name, theirs) in &candles {
            let mine = &ours[name];
            assert_eq!((mine.dtype(), mine.dims()), (theirs.dtype(), theirs.dims()), "{name}");
            let (a, b) = (mine.to_dtype(DType::F64).unwrap().flatten_all().unwrap(), theirs.to_dtype(DType::F64).unwrap().flatten_all().unwrap());
            assert_eq!(a.to_vec1::<f64>().unwrap(), b.to_vec1::<f64>().unwrap(), "{name}");
        }
    }

    #[test]
    fn a_malformed_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        std::fs::write(&path, b"not a safetensors file").unwrap();
        // SAFETY: a test's own temporary file, not modified while mapped.
        #[allow(unsafe_code)]
        let map = Arc::new(unsafe { memmap2::Mmap::map(&std::fs::File::open(&path).unwrap()) }.unwrap());
        assert!(load(&map, &Device::Cpu).is_err());
    }
}
