//! The time series stream out in bounded chunks while the run proceeds (issue 7), and
//! the chunks add up to the whole series.

mod common;

use common::scenario;
use millinet_engine::series::CHUNK_ROWS;
use millinet_engine::{run_file_streaming, ColumnData, RunOptions, Table};

fn rows(table: &Table) -> usize {
    match &table.columns[0].data {
        ColumnData::F64(v) => v.len(),
        ColumnData::U32(v) => v.len(),
        ColumnData::U64(v) => v.len(),
    }
}

#[test]
fn series_stream_in_bounded_chunks_of_every_table() {
    // 4 s at 1 ms: 4001 samples of 1 flow row and 4 queue rows, 20 005 rows in all.
    let opts = RunOptions { overrides: vec!["duration_s=4".into(), "flows.0.cc=newreno".into()], ..RunOptions::default() };
    let mut chunks: Vec<Vec<Table>> = Vec::new();
    run_file_streaming(&scenario("dumbbell"), &opts, &mut |_, _| {}, &mut |chunk| chunks.push(chunk)).unwrap();
    assert!(chunks.len() >= 2, "a run longer than one chunk streams several");
    for chunk in &chunks {
        let names: Vec<&str> = chunk.iter().map(|t| t.name).collect();
        assert_eq!(names, ["flows", "goodput", "queues"]);
        let sampled: usize = chunk.iter().filter(|t| t.name != "goodput").map(rows).sum();
        assert!(sampled < CHUNK_ROWS + 5, "a chunk holds at most one sampling step beyond the bound");
    }
    let total = |name: &str| chunks.iter().flatten().filter(|t| t.name == name).map(rows).sum::<usize>();
    assert_eq!((total("flows"), total("queues")), (4001, 4 * 4001));
    assert_eq!(total("goodput"), 400, "goodput bins (10 ms) come once, with the last chunk");
    assert_eq!(rows(&chunks.last().unwrap()[1]), 400);
}
