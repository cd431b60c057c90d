import Foundation
import GRDB
import GRDBSQLite

/// A shelf holds books and other shelves, nested to any depth. `parentId` nil = top level.
public struct Shelf: Codable, Sendable, Equatable, Identifiable, FetchableRecord, MutablePersistableRecord {
    public var id: Int64?
    public var parentId: Int64?
    public var name: String
    public static let databaseTableName = "shelf"
    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// Per-book playback settings, restored whenever the book is activated.
///
/// ```swift
/// try library.setSettings(of: book, BookSettings(speed: 1.5, loop: .chapter))
/// ```
public struct BookSettings: Codable, Sendable, Equatable {
    /// What plays again when the end is reached; the raw values are the database's spelling.
    public enum Loop: String, Codable, Sendable, CaseIterable {
        /// Nothing: the end of the book finishes it.
        case none
        /// The chapter being played, over and over.
        case chapter
        /// The whole book, again after its end.
        case book
    }

    /// Linear: 1 is the recording's own level; above 1 amplifies, through a limiter (up to 10).
    public var volume: Double = 1
    public var speed: Double = 1
    public var shuffle = false
    public var loop = Loop.none
    /// Loudness normalisation: the book played at the target loudness, by the gain its measured loudness asks for.
    public var normalise = false
    /// Seconds not played at the start and at the end of every file (0 = none, up to ``maximumSkip``).
    public var skipIntro: Double = 0
    public var skipOutro: Double = 0
    /// The most seconds `skipIntro` and `skipOutro` may each be.
    public static let maximumSkip = 600.0
    /// The speech compressor: quieter passages brought up and louder ones down, for uneven recordings.
    public var compress = false
    /// Skip silence: pauses longer than `silenceThreshold` seconds (the file's time) shortened by `silenceAmount` of
    /// what lasts beyond it. The threshold and the amount are kept while it is off.
    public var skipSilence = false
    public var silenceThreshold = 0.5
    public var silenceAmount = 0.75
    /// The thresholds (seconds) and amounts allowed.
    public static let silenceThresholds = 0.1...10.0
    public static let silenceAmounts = 0.1...1.0
    public init(volume: Double = 1, speed: Double = 1, shuffle: Bool = false, loop: Loop = .none, normalise: Bool = false,
                skipIntro: Double = 0, skipOutro: Double = 0, compress: Bool = false, skipSilence: Bool = false,
                silenceThreshold: Double = 0.5, silenceAmount: Double = 0.75) {
        self.volume = volume
        self.speed = speed
        self.shuffle = shuffle
        self.loop = loop
        self.normalise = normalise
        self.skipIntro = skipIntro
        self.skipOutro = skipOutro
        self.compress = compress
        self.skipSilence = skipSilence
        self.silenceThreshold = silenceThreshold
        self.silenceAmount = silenceAmount
    }
}

/// A book: an ordered list of files with a resume position, settings and bookmarks.
public struct Book: Codable, Sendable, Equatable, Identifiable, FetchableRecord, MutablePersistableRecord {
    public var id: Int64?
    public var shelfId: Int64?
    public var title: String
    public var author: String?
    public var narrator: String?
    /// A cover image file (cached embedded art, or an image beside the files).
    public var coverPath: String?
    /// The folder it was imported from and the album tag that picked it out (mixed folders); the pair
    /// identifies the book when the folder is imported again.
    public var sourcePath: String?
    public var albumKey: String
    public var addedAt: Date
    public var modifiedAt: Date
    public var lastPlayedAt: Date?
    public var finished: Bool
    /// The book's scratchpad.
    public var note: String
    public var volume: Double
    public var speed: Double
    public var shuffle: Bool
    public var loop: BookSettings.Loop
    /// The resume position: a file of this book and an offset in it, in microseconds.
    public var positionFileId: Int64?
    public var positionOffset: Int64
    /// Where the user put it in "User" order.
    public var userOrder: Int64
    /// Its folder can't be reached: the file system it is on is not mounted, or its library folder is gone. Its files
    /// are then neither present nor missing; it is untouched until they are back.
    public var offline = false
    /// The mount its folder was on when last imported ("/" for the root file system); nil when not known yet.
    public var mountPath: String?
    /// Whether loudness normalisation is on (``BookSettings/normalise``).
    public var normalise = false
    /// The integrated loudness of its files (EBU R128), LUFS; nil when not measured (yet), or it could not be.
    public var loudness: Double?
    /// Why its loudness could not be measured (all silence, a file that cannot be decoded, the time ran out); nil
    /// when it was, or not yet.
    public var loudnessProblem: String?
    /// Seconds not played at the start and at the end of every file (``BookSettings/skipIntro``).
    public var skipIntro: Double = 0
    public var skipOutro: Double = 0
    /// Whether the speech compressor is on (``BookSettings/compress``).
    public var compress = false
    /// Skip silence (``BookSettings/skipSilence``).
    public var skipSilence = false
    public var silenceThreshold = 0.5
    public var silenceAmount = 0.75
    /// The series the book belongs to (its files' tags, its folder's layout, or set by hand); nil: none known.
    public var series: String?
    /// Its place in the series, as written ("2", "2.5", "0"); nil when not known.
    public var seriesPart: String?

    public static let databaseTableName = "book"
    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
    // Dates without ICU (StoredDate).
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { StoredDate.decoding }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }

    public var settings: BookSettings {
        get {
            BookSettings(volume: volume, speed: speed, shuffle: shuffle, loop: loop, normalise: normalise,
                         skipIntro: skipIntro, skipOutro: skipOutro, compress: compress, skipSilence: skipSilence,
                         silenceThreshold: silenceThreshold, silenceAmount: silenceAmount)
        }
        set {
            volume = newValue.volume; speed = newValue.speed; shuffle = newValue.shuffle; loop = newValue.loop
            normalise = newValue.normalise
            skipIntro = newValue.skipIntro; skipOutro = newValue.skipOutro
            compress = newValue.compress
            skipSilence = newValue.skipSilence; silenceThreshold = newValue.silenceThreshold
            silenceAmount = newValue.silenceAmount
        }
    }
}

extension Book {
    /// The columns a book is read from (each named as the case), in the order of the table's.
    enum Field: Int, CaseIterable {
        case id, shelfId, title, author, narrator, coverPath, sourcePath, albumKey, addedAt, modifiedAt, lastPlayedAt,
             finished, note, volume, speed, shuffle, loop, positionFileId, positionOffset, userOrder, offline, mountPath,
             normalise, loudness, loudnessProblem, skipIntro, skipOutro, compress, skipSilence, silenceThreshold,
             silenceAmount, series, seriesPart
    }

    /// Where each ``Field`` is among a statement's `columns` (by ``Field``'s raw values); throws when one is not there.
    static func places(in columns: [String]) throws -> [Int] {
        var found: [String: Int] = [:]
        for (place, name) in columns.enumerated() where found[name.lowercased()] == nil { found[name.lowercased()] = place }
        let places = Field.allCases.compactMap { found[String(describing: $0).lowercased()] }
        guard places.count == Field.allCases.count else {
            throw LibraryError.unavailable("database error: a book's row lacks some of its columns: \(columns)")
        }
        return places
    }

    /// Read column by column rather than through Decodable: GRDB's decoder of a record took most of the time of reading
    /// a page of books (docs/benchmarks.md, "Library"). Written through Encodable, as the other records.
    public init(row: Row) throws {
        try self.init(columns: RowColumns(row: row, places: try Self.places(in: Array(row.columnNames))))
    }

    /// The book whose columns are `columns`.
    init(columns: some BookColumns) throws {
        func present<T>(_ value: T?, _ field: Field) throws -> T {
            guard let value else { throw LibraryError.unavailable("database error: book.\(field) is NULL") }
            return value
        }
        func required<T>(_ read: (Field) throws -> T?, _ field: Field) throws -> T { try present(try read(field), field) }
        id = try columns.integer(.id)
        shelfId = try columns.integer(.shelfId)
        title = try required(columns.text, .title)
        author = try columns.text(.author)
        narrator = try columns.text(.narrator)
        coverPath = try columns.text(.coverPath)
        sourcePath = try columns.text(.sourcePath)
        albumKey = try required(columns.text, .albumKey)
        addedAt = try required(columns.date, .addedAt)
        modifiedAt = try required(columns.date, .modifiedAt)
        lastPlayedAt = try columns.date(.lastPlayedAt)
        finished = try required(columns.bool, .finished)
        note = try required(columns.text, .note)
        volume = try required(columns.double, .volume)
        speed = try required(columns.double, .speed)
        shuffle = try required(columns.bool, .shuffle)
        loop = try present(BookSettings.Loop(rawValue: try required(columns.text, .loop)), .loop)
        positionFileId = try columns.integer(.positionFileId)
        positionOffset = try required(columns.integer, .positionOffset)
        userOrder = try required(columns.integer, .userOrder)
        offline = try required(columns.bool, .offline)
        mountPath = try columns.text(.mountPath)
        normalise = try required(columns.bool, .normalise)
        loudness = try columns.double(.loudness)
        loudnessProblem = try columns.text(.loudnessProblem)
        skipIntro = try required(columns.double, .skipIntro)
        skipOutro = try required(columns.double, .skipOutro)
        compress = try required(columns.bool, .compress)
        skipSilence = try required(columns.bool, .skipSilence)
        silenceThreshold = try required(columns.double, .silenceThreshold)
        silenceAmount = try required(columns.double, .silenceAmount)
        series = try columns.text(.series)
        seriesPart = try columns.text(.seriesPart)
    }

    /// The books `sql` selects (every column of `book`), its columns looked up once for all the rows, each row read with
    /// SQLite's own calls; the statement `kept` for the next call (not for SQL that changes from call to call).
    static func read(_ db: Database, sql: String, arguments: StatementArguments = [], kept: Bool = true) throws -> [Book] {
        try read(db, try Library.statement(db, sql, kept: kept), arguments: arguments)
    }

    /// The books `statement` selects with `arguments` (every column of `book`).
    static func read(_ db: Database, _ statement: Statement, arguments: StatementArguments) throws -> [Book] {
        let places = try places(in: statement.columnNames)
        return try Library.rows(db, statement, arguments) { try Book(columns: StatementColumns(statement: $0, places: places)) }
    }
}

/// The columns of a book's row, each nil when NULL, by ``Book/Field``.
protocol BookColumns {
    func integer(_ field: Book.Field) throws -> Int64?
    func double(_ field: Book.Field) throws -> Double?
    func bool(_ field: Book.Field) throws -> Bool?
    func text(_ field: Book.Field) throws -> String?
    /// Throws when the column holds something else than a date.
    func date(_ field: Book.Field) throws -> Date?
}

/// A book's columns in a GRDB row, decoded by GRDB, at `places` (``Book/places(in:)``).
struct RowColumns: BookColumns {
    let row: Row
    let places: [Int]

    private func value<T: DatabaseValueConvertible & StatementColumnConvertible>(_ field: Book.Field) throws -> T? {
        try row.decode(atIndex: places[field.rawValue])
    }
    func integer(_ field: Book.Field) throws -> Int64? { try value(field) }
    func double(_ field: Book.Field) throws -> Double? { try value(field) }
    func bool(_ field: Book.Field) throws -> Bool? { try value(field) }
    func text(_ field: Book.Field) throws -> String? { try value(field) }
    func date(_ field: Book.Field) throws -> Date? {
        let value: DatabaseValue = try row.decode(atIndex: places[field.rawValue])
        guard !value.isNull else { return nil }
        guard let date = StoredDate.date(value) else {
            throw LibraryError.unavailable("database error: book.\(field) is not a date: \(value)")
        }
        return date
    }
}

/// A book's columns in the current row of a statement, at `places` (``Book/places(in:)``), read with SQLite's own calls
/// as GRDB reads them.
struct StatementColumns: BookColumns {
    let statement: SQLiteStatement
    let places: [Int]

    private func column(_ field: Book.Field) -> Int32? {
        let column = Int32(places[field.rawValue])
        return sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : column
    }
    func integer(_ field: Book.Field) -> Int64? { column(field).map { sqlite3_column_int64(statement, $0) } }
    func double(_ field: Book.Field) -> Double? { column(field).map { sqlite3_column_double(statement, $0) } }
    func bool(_ field: Book.Field) -> Bool? { column(field).map { sqlite3_column_int64(statement, $0) != 0 } }
    /// The column's text up to a NUL, if it holds one, as GRDB reads it; nil when NULL.
    func text(_ field: Book.Field) throws -> String? {
        guard let column = column(field) else { return nil }
        guard let text = sqlite3_column_text(statement, column) else {
            throw LibraryError.unavailable("database error: book.\(field) could not be read (out of memory)")
        }
        return String(cString: text)
    }
    func date(_ field: Book.Field) throws -> Date? {
        guard let column = column(field) else { return nil }
        guard let date = StoredDate.date(statement, column) else {
            throw LibraryError.unavailable("database error: book.\(field) is not a date: \(DatabaseValue(sqliteStatement: statement, index: column))")
        }
        return date
    }
}

/// One audio file of a book, with its tags.
public struct BookFile: Codable, Sendable, Equatable, Identifiable, FetchableRecord, MutablePersistableRecord {
    public var id: Int64?
    public var bookId: Int64
    public var path: String
    /// The file's place in the book (0-based), in the user's order.
    public var position: Int64
    /// Microseconds; nil when unknown.
    public var duration: Int64?
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var composer: String?
    public var genre: String?
    public var trackNumber: Int64?
    public var discNumber: Int64?
    /// Present (true) or missing (false): false once the file is gone from disk (unless its book is offline); kept
    /// with its bookmarks until the book is deleted, and present again when an import finds it (at its path, or
    /// by its fingerprint elsewhere).
    public var available: Bool
    /// The file as it was when an import last read it: bytes, modification time (ns since 1970) and its
    /// ``FileFingerprint`` value; nil for a file not read since the library had them.
    public var size: Int64?
    public var modified: Int64?
    public var fingerprint: String?

    public static let databaseTableName = "bookFile"
    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// A chapter inside a file (a file without chapters is one chapter, implied).
public struct Chapter: Codable, Sendable, Equatable, Identifiable, FetchableRecord, MutablePersistableRecord {
    public var id: Int64?
    public var fileId: Int64
    public var position: Int64
    public var title: String
    /// Microseconds from the start of the file.
    public var start: Int64
    public var end: Int64?

    public static let databaseTableName = "chapter"
    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// A named place in a book, with a note.
public struct Bookmark: Codable, Sendable, Equatable, Identifiable, FetchableRecord, MutablePersistableRecord {
    public enum Kind: String, Codable, Sendable { case user, sleepTimer, unplug, stop }
    public var id: Int64?
    public var bookId: Int64
    public var fileId: Int64
    /// Microseconds from the start of the file.
    public var offset: Int64
    public var title: String
    public var note: String
    public var createdAt: Date
    public var kind: Kind

    public init(id: Int64? = nil, bookId: Int64, fileId: Int64, offset: Int64, title: String, note: String = "",
                createdAt: Date = Date(), kind: Kind = .user) {
        self.id = id
        self.bookId = bookId
        self.fileId = fileId
        self.offset = offset
        self.title = title
        self.note = note
        self.createdAt = createdAt
        self.kind = kind
    }

    public static let databaseTableName = "bookmark"
    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
    // Dates without ICU (StoredDate).
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { StoredDate.decoding }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
}

/// Why a book's loudness could not be measured, as kept with the book and shown.
public struct LoudnessProblem: Error, Sendable, Equatable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
}
