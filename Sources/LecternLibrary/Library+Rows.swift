import GRDB
import GRDBSQLite

// Rows read with SQLite's own calls: GRDB's generic cursor and decoding cost more than the statements themselves for
// the 10,000 ids of a word of every book, or a page of 200 books and their totals.
extension Library {
    /// The statement of `sql`: `kept` by the connection for the next call, or made for this one (SQL that changes
    /// from call to call, which would fill the connection's cache).
    static func statement(_ db: Database, _ sql: String, kept: Bool) throws -> Statement {
        try kept ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql)
    }

    /// Every row of `sql`, each read by `row` with SQLite's own calls on the statement, the statement kept for the next
    /// call.
    static func rows<T>(_ db: Database, _ sql: String, _ arguments: StatementArguments = [],
                        _ row: (SQLiteStatement) throws -> T) throws -> [T] {
        try rows(db, try db.cachedStatement(sql: sql), arguments, row)
    }

    /// Every row of `statement` with `arguments`, each read by `row` with SQLite's own calls on the statement.
    static func rows<T>(_ db: Database, _ statement: Statement, _ arguments: StatementArguments,
                        _ row: (SQLiteStatement) throws -> T) throws -> [T] {
        try statement.setArguments(arguments)
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        var rows: [T] = []
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: rows.append(try row(handle))
            case SQLITE_DONE: return rows
            case let code:
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: statement.sql)
            }
        }
    }

    /// The first column of every row of `sql`, an integer.
    static func ids(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws -> [Int64] {
        try rows(db, sql, arguments) { sqlite3_column_int64($0, 0) }
    }

    /// What `read` reads from the statement of `sql` (given its number of ids) with `ids`, a page of them at a time: the
    /// statement's `IN (…)` has a page's number of parameters, those past the ids NULL (which equals no id), so that one
    /// statement, kept, serves every call.
    static func pages<T>(of ids: [Int64], _ db: Database, _ sql: (Int) -> String,
                         _ read: (Statement, StatementArguments) throws -> [T]) throws -> [T] {
        let statement = try db.cachedStatement(sql: sql(maximumPageSize))
        var rows: [T] = []
        for start in stride(from: 0, to: ids.count, by: maximumPageSize) {
            let page = ids[start..<min(start + maximumPageSize, ids.count)]
            let unused = [Int64?](repeating: nil, count: maximumPageSize - page.count)
            rows += try read(statement, StatementArguments(page.map { $0 } + unused))
        }
        return rows
    }
}
