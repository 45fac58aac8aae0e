//! Columnar time-series tables handed to the Python layer, which writes Parquet.

#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    F64(Vec<f64>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: &'static str,
    pub data: ColumnData,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<Column>,
}

impl ColumnData {
    fn extend(&mut self, more: ColumnData) {
        match (self, more) {
            (ColumnData::F64(a), ColumnData::F64(b)) => a.extend(b),
            (ColumnData::U32(a), ColumnData::U32(b)) => a.extend(b),
            (ColumnData::U64(a), ColumnData::U64(b)) => a.extend(b),
            _ => panic!("chunks of one column have one type"),
        }
    }
}

/// Appends a chunk of tables to `tables` (same tables, same columns, same order).
pub fn append(tables: &mut Vec<Table>, chunk: Vec<Table>) {
    if tables.is_empty() {
        *tables = chunk;
        return;
    }
    for (table, more) in tables.iter_mut().zip(chunk) {
        assert_eq!(table.name, more.name, "chunks list the same tables");
        for (column, data) in table.columns.iter_mut().zip(more.columns) {
            column.data.extend(data.data);
        }
    }
}
