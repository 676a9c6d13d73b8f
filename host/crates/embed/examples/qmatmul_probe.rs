//! Is candle's quantized matmul a faster CPU path for the encoder? Times
//! candle's Q8_0 and Q4K matmuls against its f32 matmul on the linear-layer
//! shapes of all-MiniLM-L6-v2 / multilingual-e5-small (hidden 384, FFN 1536)
//! for a 4,096-token batch, with the error against f32.
//!
//! ```text
//! cargo run --release -p code-intel-embed --example qmatmul_probe
//! ```
//!
//! candle's AVX512-VNNI kernels need the inner dimension to be a multiple of
//! 256, which only the FFN's down projection (1536) is; figures in
//! bench/README.md.
use std::time::Instant;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

fn main() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let m = 4096;
    for (k, n) in [(384usize, 384usize), (384, 1536), (1536, 384)] {
        let x = Tensor::randn(0f32, 1.0, (m, k), &dev)?;
        let w = Tensor::randn(0f32, 0.05, (n, k), &dev)?;
        let wt = w.t()?;
        let f32_out = x.matmul(&wt)?;
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4K] {
            let q = match QTensor::quantize(&w, dtype) {
                Ok(q) => q,
                Err(e) => {
                    println!(
                        "k={k} n={n} {dtype:?}: not supported: {}",
                        e.to_string().lines().next().unwrap_or_default()
                    );
                    continue;
                }
            };
            let qm = QMatMul::from_qtensor(q)?;
            let out = qm.forward(&x)?;
            let err = (&out - &f32_out)?
                .sqr()?
                .mean_all()?
                .to_scalar::<f32>()?
                .sqrt();
            let reps = 10;
            let t = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(x.matmul(&wt)?);
            }
            let tf = t.elapsed().as_secs_f64() / reps as f64;
            let t = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(qm.forward(&x)?);
            }
            let tq = t.elapsed().as_secs_f64() / reps as f64;
            let gflop = 2.0 * (m * k * n) as f64 / 1e9;
            println!(
                "k={k} n={n} {dtype:?}: f32 {:.2} ms ({:.0} GFLOP/s), quantized {:.2} ms ({:.0} GFLOP/s), speedup {:.2}x, rms err {err:.4}",
                tf * 1e3,
                gflop / tf,
                tq * 1e3,
                gflop / tq,
                tf / tq
            );
        }
    }
    Ok(())
}
