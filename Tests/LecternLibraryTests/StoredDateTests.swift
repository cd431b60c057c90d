import Foundation
import GRDB
import GRDBSQLite
@testable import LecternLibrary
import Testing

/// The library writes and reads dates without ICU (StoredDate): the text must be GRDB's, and the dates read back
/// GRDB's, to the millisecond, or dates saved before and after the change would disagree.
@Suite("Stored dates")
struct StoredDateTests {
    static let dates: [Date] = {
        var generator = SystemRandomNumberGenerator()
        let edges: [TimeInterval] = [0, 0.0004, 0.0005, 0.9995, 0.999, 59.9999, 951_782_400.25 /* 2000-02-29 */,
                                     1_709_164_800.5 /* 2024-02-29 */, 4_102_444_799.999, 1_234_567_890.5, -86_400.5,
                                     977_578_383.3585689 /* 2000-12-23: the fraction rounds with the time of day */]
        let randoms = (0..<500).map { _ in Double.random(in: 0..<4_102_444_800, using: &generator) }
        return (edges + randoms).map { Date(timeIntervalSince1970: $0) }
    }()

    @Test func theTextIsGRDBs() {
        for date in Self.dates {
            #expect(StoredDate.text(date) == String.fromDatabaseValue(date.databaseValue), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func datesReadBackAsGRDBReadsThem() {
        for date in Self.dates {
            let value = date.databaseValue
            #expect(StoredDate.date(value) == Date.fromDatabaseValue(value), "\(date.timeIntervalSince1970)")
        }
        for text in ["2024-02-29", "2024-02-29 13:45", "2024-02-29 13:45:07", "2024-02-29T13:45:07.250", "1969-12-31 23:59:59.999",
                     "2024-02-29 13:45:07.250+02:00", "1700000000"] {
            #expect(StoredDate.date(text.databaseValue) == Date.fromDatabaseValue(text.databaseValue), "\(text)")
        }
        #expect(StoredDate.date(1_700_000_000.databaseValue) == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(StoredDate.date("not a date".databaseValue) == nil)
        #expect(StoredDate.date(DatabaseValue.null) == nil)
    }

    @Test func datesReadFromAStatementAsFromItsValue() throws {
        let texts = Self.dates.map(StoredDate.text) + [
            "2024-02-29", "2024-02-29T13:45:07.250", "2024-02-29 13:45:07.250+02:00", "2024-02-29 13:45:07.25",
            "2024-13-40 25:61:61.999", "2024-02-29 13:45:07.2x0", "not a date", "",
        ]
        let values = texts.map(\.databaseValue) + [1_700_000_000.databaseValue, 1.5e9.databaseValue]
        try DatabaseQueue().read { db in
            let statement = try db.makeStatement(sql: "SELECT ?")
            for value in values {
                try statement.setArguments([value])
                #expect(sqlite3_step(statement.sqliteStatement) == SQLITE_ROW)
                #expect(StoredDate.date(statement.sqliteStatement, 0) == StoredDate.date(value), "\(value)")
                sqlite3_reset(statement.sqliteStatement)
            }
        }
    }
}
