import DBus

/// A shelf, as ListAllShelves gives it.
public struct Shelf: ReplyDecodable {
    public var id: Int64
    /// The shelf it is on; 0 at the top level.
    public var parent: Int64?
    public var name: String?
    /// The shelf as lecternd gave it, every key: what `--json` prints.
    public var reply: DBusValue

    public init(_ reader: inout ReplyReader) throws {
        id = try reader.read("id") ?? 0
        parent = try reader.read("parent")
        name = try reader.read("name")
        reply = reader.reply
    }
}

/// A book as a listing gives it (ListBooksPage, Search: a struct, its fields in this order), and as GetBook gives the
/// same under these names.
public struct ListedBook: ReplyDecodable {
    public var id: Int64
    public var shelf: Int64
    public var title: String
    public var author: String
    public var narrator: String
    /// A file path, or "".
    public var cover: String
    /// The folder it was imported from.
    public var source: String
    /// "available" or "offline".
    public var state: String
    public var files: UInt32
    /// How many of its files are no longer on disk.
    public var missing: UInt32
    /// µs.
    public var duration: Int64
    /// The id of the file it is at; 0: not started.
    public var positionFile: Int64
    /// µs into that file.
    public var positionOffset: Int64
    public var finished: Bool
    /// µs since the epoch; 0: never.
    public var added: Int64
    public var modified: Int64
    public var lastPlayed: Int64

    public init(_ reader: inout ReplyReader) throws {
        id = try reader.read("id") ?? 0
        shelf = try reader.read("shelf") ?? 0
        title = try reader.read("title") ?? ""
        author = try reader.read("author") ?? ""
        narrator = try reader.read("narrator") ?? ""
        cover = try reader.read("cover") ?? ""
        source = try reader.read("source") ?? ""
        state = try reader.read("state") ?? ""
        files = try reader.read("files") ?? 0
        missing = try reader.read("missing") ?? 0
        duration = try reader.read("duration") ?? 0
        positionFile = try reader.read("position_file") ?? 0
        positionOffset = try reader.read("position_offset") ?? 0
        finished = try reader.read("finished") ?? false
        added = try reader.read("added") ?? 0
        modified = try reader.read("modified") ?? 0
        lastPlayed = try reader.read("last_played") ?? 0
    }
}

/// A page of a listing, and how many books the listing has in all.
public struct BooksPage: Sendable {
    public var books: [ListedBook]
    public var total: UInt32
}

/// A book as GetBook gives it: what a listing shows, its note, settings and files. Random's book is the same without
/// files.
public struct BookDetails: ReplyDecodable {
    public var book: ListedBook
    public var note: String
    /// Loudness normalisation on.
    public var normalise: Bool
    /// Its integrated loudness in LUFS, once measured.
    public var loudness: Double?
    /// Why it could not be measured.
    public var loudnessProblem: String?
    /// dB the normalisation applies now.
    public var loudnessGain: Double
    /// The LUFS normalisation brings books to.
    public var loudnessTarget: Double?
    /// The speech compressor on.
    public var compress: Bool
    /// Seconds not played at the start and the end of every file.
    public var skipIntro: Double
    public var skipOutro: Double
    public var skipSilence: Bool
    /// Seconds of a pause kept whole, and the share of the rest removed.
    public var silenceThreshold: Double
    public var silenceAmount: Double
    /// Its series and its part in it; nil when none.
    public var series: String?
    public var seriesPart: String?
    public var files: [BookFile]
    /// The book as lecternd gave it, every key: what `--json` prints.
    public var reply: DBusValue

    public init(_ reader: inout ReplyReader) throws {
        book = try ListedBook(&reader)
        note = try reader.read("note") ?? ""
        normalise = try reader.read("normalise") ?? false
        loudness = try reader.read("loudness")
        loudnessProblem = try reader.read("loudness_problem")
        loudnessGain = try reader.read("loudness_gain") ?? 0
        loudnessTarget = try reader.read("loudness_target")
        compress = try reader.read("compress") ?? false
        skipIntro = try reader.read("skip_intro") ?? 0
        skipOutro = try reader.read("skip_outro") ?? 0
        skipSilence = try reader.read("skip_silence") ?? false
        silenceThreshold = try reader.read("silence_threshold") ?? 0.5
        silenceAmount = try reader.read("silence_amount") ?? 0.75
        series = try reader.read("series").flatMap { (name: String) in name.isEmpty ? nil : name }
        seriesPart = try reader.read("series_part").flatMap { (part: String) in part.isEmpty ? nil : part }
        files = try reader.dictionaries("file_list") ?? []
        reply = reader.reply
    }
}

/// A file of a book, as GetBook's file_list and Random give it.
public struct BookFile: ReplyDecodable {
    public var id: Int64?
    /// Its place in the book, from 0.
    public var index: Int64
    public var path: String
    /// µs.
    public var duration: Int64
    /// "present" or "missing".
    public var state: String?
    /// Its title tag.
    public var title: String?
    public var chapters: [Chapter]
    /// The file as lecternd gave it, every key: what `--json` prints.
    public var reply: DBusValue

    public init(_ reader: inout ReplyReader) throws {
        id = try reader.read("id")
        index = try reader.read("index") ?? 0
        path = try reader.read("path") ?? ""
        duration = try reader.read("duration") ?? 0
        state = try reader.read("state")
        title = try reader.read("title")
        chapters = try reader.dictionaries("chapters") ?? []
        reply = reader.reply
    }
}

/// A chapter of a file.
public struct Chapter: ReplyDecodable {
    public var title: String
    /// µs into the file.
    public var start: Int64

    public init(_ reader: inout ReplyReader) throws {
        title = try reader.read("title") ?? ""
        start = try reader.read("start") ?? 0
    }
}

/// A value of a property among books (Group), and how many books have it.
public struct BookGroup: ReplyDecodable {
    public var value: String
    public var books: UInt32

    public init(_ reader: inout ReplyReader) throws {
        value = try reader.value("value")
        books = try reader.value("books")
    }
}

/// A series (ListSeries), and how many books it has.
public struct Series: ReplyDecodable {
    public var name: String
    public var books: UInt32

    public init(_ reader: inout ReplyReader) throws {
        name = try reader.value("name")
        books = try reader.value("books")
    }
}

/// ImportProgress: `done` of `total` files read.
public struct ImportProgress: Sendable {
    public var job: UInt32
    public var done: UInt32
    public var total: UInt32
    /// The file being read.
    public var path: String
}

/// ImportFinished: the books imported, or why the import failed; and what it left out.
public struct ImportFinished: Sendable {
    public var job: UInt32
    public var books: [Int64]
    /// "" when it succeeded.
    public var error: String
    public var skipped: [SkippedFiles]
}

/// What an import left out of one kind: how many, and the first few paths.
public struct SkippedFiles: ReplyDecodable {
    /// "not-audio", "empty", "unreadable", "special", "link", "other-file-system", "too-deep", "name-not-utf8",
    /// "unplayable" or "copy".
    public var kind: String
    public var count: UInt32
    public var paths: [String]

    public init(_ reader: inout ReplyReader) throws {
        kind = try reader.value("kind")
        count = try reader.value("count")
        paths = try reader.value("paths")
    }
}

/// What the client reads of org.lectern.Library1.
public struct Library1: Sendable {
    public let shelves = Decoding<[Shelf]>(.reply(.library, method: "ListAllShelves")) { try $0.dictionaries("shelves") ?? [] }
    public let createdShelf = Decoding<Int64>.reply(.library, "CreateShelf", "id")
    public let booksPage = Decoding<BooksPage>(.reply(.library, method: "ListBooksPage"), what: "lists books", readBooksPage)
    public let booksMatching = Decoding<BooksPage>(.reply(.library, method: "ListBooksMatching"), what: "lists books", readBooksPage)
    public let movedBooks = Decoding<[Int64]>.reply(.library, "MoveBooks", "moved")
    public let search = Decoding<BooksPage>(.reply(.library, method: "Search"), what: "lists books", readBooksPage)
    public let book = Decoding<BookDetails>(.reply(.library, method: "GetBook")) { try $0.value("book", of: BookDetails.self) }
    public let groups = Decoding<[BookGroup]>(.reply(.library, method: "Group")) { try $0.structs("groups") ?? [] }
    public let series = Decoding<[Series]>(.reply(.library, method: "ListSeries")) { try $0.structs("series") ?? [] }
    public let randomBook = Decoding<BookDetails>(.reply(.library, method: "Random")) { try $0.value("found", of: BookDetails.self) }
    public let randomFile = Decoding<BookFile>(.reply(.library, method: "Random")) { try $0.value("found", of: BookFile.self) }
    public let importJob = Decoding<UInt32>.reply(.library, "Import", "job")
    public let importProgress = Decoding<ImportProgress>(.signal(.library, name: "ImportProgress")) {
        ImportProgress(job: try $0.value("job"), done: try $0.value("done"), total: try $0.value("total"), path: try $0.value("path"))
    }
    public let importFinished = Decoding<ImportFinished>(.signal(.library, name: "ImportFinished")) {
        ImportFinished(job: try $0.value("job"), books: try $0.value("books"), error: try $0.value("error"),
                       skipped: try $0.structs("skipped") ?? [])
    }
    public let currentBook = Decoding<Int64>.property(.library, "CurrentBook")
    public let offlineBooks = Decoding<UInt32>.property(.library, "OfflineBooks")
    public let missingFiles = Decoding<UInt32>.property(.library, "MissingFiles")

}

/// A listing's page: ListBooksPage's, ListBooksMatching's and Search's replies.
private func readBooksPage(_ reader: inout ReplyReader) throws -> BooksPage {
    BooksPage(books: try reader.structs("books") ?? [], total: try reader.value("total"))
}
