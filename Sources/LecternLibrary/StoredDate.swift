import Foundation
import GRDB
import GRDBSQLite
#if canImport(Glibc)
import Glibc
#endif

/// Dates as the library stores them, GRDB's text "yyyy-MM-dd HH:mm:ss.SSS" in UTC, written and read without
/// Foundation's DateFormatter and Calendar. Those run ICU, and playing a book wrote and read dates (lastPlayedAt,
/// the Book record): ICU's code and data cost 3.2 MB of resident memory, and formatting was a third of the CPU of a
/// position save (docs/decisions/position-saves.md). The records with dates (Book, Bookmark) use these through
/// GRDB's date strategies; the results are GRDB's own to the millisecond (LecternLibraryTests, StoredDateTests).
enum StoredDate {
    static func text(_ date: Date) -> String {
        // To the nearest millisecond, as ICU formats "SSS" (0.999 is 0.99899… as a Double).
        let total = (date.timeIntervalSince1970 * 1000).rounded()
        var whole = time_t((total / 1000).rounded(.down))
        let milliseconds = Int32(min(max(total - Double(whole) * 1000, 0), 999))
        var parts = tm()
        gmtime_r(&whole, &parts)
        func digits(_ value: Int32, _ count: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, count - text.count)) + text
        }
        return digits(parts.tm_year + 1900, 4) + "-" + digits(parts.tm_mon + 1, 2) + "-" + digits(parts.tm_mday, 2) + " "
            + digits(parts.tm_hour, 2) + ":" + digits(parts.tm_min, 2) + ":" + digits(parts.tm_sec, 2) + "."
            + digits(milliseconds, 3)
    }

    /// GRDB's parsing of the text (its own, no ICU), then the date computed with timegm instead of a Calendar.
    /// Anything else (a time zone in the text, a number) goes to GRDB's `Date.fromDatabaseValue`.
    static func date(_ value: DatabaseValue) -> Date? {
        guard let parsed = DatabaseDateComponents.fromDatabaseValue(value),
              [.YMD, .YMD_HM, .YMD_HMS, .YMD_HMSS].contains(parsed.format) else { return Date.fromDatabaseValue(value) }
        let c = parsed.dateComponents
        guard c.timeZone == nil, let year = c.year, let month = c.month, let day = c.day else {
            return Date.fromDatabaseValue(value)
        }
        return date(year: year, month: month, day: day, hour: c.hour ?? 0, minute: c.minute ?? 0, second: c.second ?? 0,
                    nanosecond: c.nanosecond ?? 0)
    }

    /// The date in column `column` of the current row of `statement`, as ``date(_:)`` reads it: the text the library
    /// writes ("yyyy-MM-dd HH:mm:ss.SSS") parsed in place, anything else through ``date(_:)``.
    static func date(_ statement: SQLiteStatement, _ column: Int32) -> Date? {
        if sqlite3_column_type(statement, column) == SQLITE_TEXT, let text = sqlite3_column_text(statement, column),
           let date = date(written: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column)))) {
            return date
        }
        return date(DatabaseValue(sqliteStatement: statement, index: column))
    }

    /// The date of `text` when it is as ``text(_:)`` writes it ("yyyy-MM-dd HH:mm:ss.SSS", UTF-8), nil otherwise.
    static func date(written text: UnsafeBufferPointer<UInt8>) -> Date? {
        guard text.count == 23, writtenSeparators.allSatisfy({ text[$0.place] == $0.byte }) else { return nil }
        func number(_ start: Int, _ count: Int) -> Int? {
            var value = 0
            for place in start..<(start + count) {
                let digit = Int(text[place]) - Int(UInt8(ascii: "0"))
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
              let minute = number(14, 2), let second = number(17, 2), let milliseconds = number(20, 3) else { return nil }
        return date(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                    nanosecond: milliseconds * 1_000_000)
    }

    /// The places and bytes of the separators of the text ``text(_:)`` writes.
    private static let writtenSeparators: [(place: Int, byte: UInt8)] = [
        (4, UInt8(ascii: "-")), (7, UInt8(ascii: "-")), (10, UInt8(ascii: " ")), (13, UInt8(ascii: ":")),
        (16, UInt8(ascii: ":")), (19, UInt8(ascii: ".")),
    ]

    /// The date of these UTC fields: timegm for the day and the time, the fraction of a second added as GRDB adds it.
    private static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, nanosecond: Int) -> Date {
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = Int(timegm(&parts)) - Int(Date.timeIntervalBetween1970AndReferenceDate)
        // The same Double as GRDB's Calendar gives: the day's start since 2001, plus the time of day with its fraction
        // (adding the fraction to the whole seconds instead rounds differently for some dates before 2001, e.g.
        // "2000-12-23 13:33:03.359"; checked against GRDB on 100,000 random dates from 1875 to 2128).
        let timeOfDay = Int(parts.tm_hour) * 3600 + Int(parts.tm_min) * 60 + Int(parts.tm_sec)
        let fraction = Double(nanosecond) / 1e9
        return Date(timeIntervalSinceReferenceDate: Double(seconds - timeOfDay) + (Double(timeOfDay) + fraction))
    }

    static let decoding = DatabaseDateDecodingStrategy.custom { date($0) }
    static let encoding = DatabaseDateEncodingStrategy.custom { text($0) }
}
