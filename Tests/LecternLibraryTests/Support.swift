import Foundation
import LecternLibrary
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A library in a real SQLite file in a fresh temporary directory: a copy of ``template``.
final class TestLibrary: Sendable {
    let directory: TemporaryDirectory
    let path: String
    let library: Library

    init() throws {
        directory = try TemporaryDirectory(prefix: "lectern-library")
        path = directory.path + "/library.sqlite"
        try FileManager.default.copyItem(atPath: try Self.template.get().path, toPath: path)
        library = try Library(path: path)
    }

    /// A library file with every migration applied, closed (its log copied into it), made once per test process.
    /// Each test's library is a copy: the migrations of hundreds of tests, their transactions synchronous on the
    /// cooperative pool, would hold its threads for half a minute at the start of the run, and every other test's
    /// async work (a D-Bus handler, a poll) with them.
    private static let template: Result<(directory: TemporaryDirectory, path: String), any Error> = Result {
        let directory = try TemporaryDirectory(prefix: "lectern-library-template")
        let path = directory.path + "/library.sqlite"
        try Library(path: path).close()
        atexit { if case .success(let template) = TestLibrary.template { template.directory.remove() } }
        return (directory, path)
    }
}

/// The kind of a `LibraryError`, without its message.
enum ErrorKind: Equatable, CustomStringConvertible {
    case notFound, invalidArgument, unavailable

    var description: String {
        switch self {
        case .notFound: "notFound"
        case .invalidArgument: "invalidArgument"
        case .unavailable: "unavailable"
        }
    }
}

extension LibraryError {
    var kind: ErrorKind {
        switch self {
        case .notFound: .notFound
        case .invalidArgument: .invalidArgument
        case .unavailable: .unavailable
        }
    }
}

/// Expects `body` to throw a `LibraryError` of `kind`.
func expectError<T>(_ kind: ErrorKind, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: () throws -> T) {
    let context = comment.map { " (\($0))" } ?? ""
    do {
        let value = try body()
        Issue.record(Comment(rawValue: "expected LibraryError.\(kind), got a result: \(value)\(context)"), sourceLocation: sourceLocation)
    } catch let error as LibraryError {
        #expect(error.kind == kind, Comment(rawValue: "\(error)\(context)"), sourceLocation: sourceLocation)
    } catch {
        Issue.record(Comment(rawValue: "expected LibraryError.\(kind), got \(type(of: error)): \(error)\(context)"),
                     sourceLocation: sourceLocation)
    }
}

/// "id in parent: name" or "id at the top: name".
func describe(_ shelf: Shelf) -> String {
    "\(shelf.id.map(String.init) ?? "nil") " + (shelf.parentId.map { "in \($0)" } ?? "at the top") + ": \(shelf.name)"
}

/// An imported file with a 1 s duration by default.
func track(_ path: String, duration: Int64? = 1_000_000, title: String? = nil, artist: String? = nil,
           album: String? = nil, albumArtist: String? = nil, composer: String? = nil, genre: String? = nil,
           trackNumber: Int64? = nil, chapters: [ImportedBook.ImportedChapter] = []) -> ImportedBook.File {
    ImportedBook.File(path: path, duration: duration, title: title, artist: artist, album: album, albumArtist: albumArtist,
                      composer: composer, genre: genre, trackNumber: trackNumber, chapters: chapters)
}

/// A book from `source` whose files are `paths` (relative to `source`), unless `files` is given.
func importedBook(_ source: String, album: String = "", title: String? = nil, author: String? = nil,
                  cover: String? = nil, paths: [String] = ["01.mp3", "02.mp3", "03.mp3"],
                  files: [ImportedBook.File]? = nil) -> ImportedBook {
    ImportedBook(sourcePath: source, albumKey: album, title: title ?? (source as NSString).lastPathComponent,
                 author: author, coverPath: cover,
                 files: files ?? paths.map { track(source + "/" + $0, title: $0) })
}

extension Library {
    /// Imports and returns the book's id.
    @discardableResult
    func add(_ book: ImportedBook, into shelf: Int64? = nil) throws -> Int64 {
        try importBook(book, into: shelf).id
    }

    func fileIds(of book: Int64) throws -> [Int64] {
        try files(of: book).map { $0.id! }
    }

    /// Every book of a shelf (nil: the top level), with its sub-shelves' when `recursive`, by title: the first page of
    /// the listing, which holds them all in a test's library.
    func everyBook(in shelf: Int64?, recursive: Bool) throws -> [Book] {
        let page = try books(in: shelf, recursive: recursive, sortedBy: .title, offset: 0, limit: Library.maximumPageSize)
        #expect(page.total == page.books.count, "more books than a page")
        return page.books
    }

    /// Every book matching `query`, by title (as `everyBook`).
    func everyMatch(_ query: LibraryQuery) throws -> [Book] {
        let page = try search("", query, offset: 0, limit: Library.maximumPageSize)
        #expect(page.total == page.books.count, "more books than a page")
        return page.books
    }
}

/// Everything observable in a library, to check that a refused operation changed nothing.
struct Snapshot: Equatable {
    var shelves: [Shelf]
    var books: [Book]
    var files: [Int64: [BookFile]]
    var chapters: [Int64: [Int64: [Chapter]]]
    var bookmarks: [Int64: [Bookmark]]
    var currentBook: Int64?

    init(_ library: Library) throws {
        shelves = try library.allShelves().sorted { $0.id! < $1.id! }
        books = try library.everyBook(in: nil, recursive: true).sorted { $0.id! < $1.id! }
        var files: [Int64: [BookFile]] = [:]
        var chapters: [Int64: [Int64: [Chapter]]] = [:]
        var bookmarks: [Int64: [Bookmark]] = [:]
        for book in books {
            files[book.id!] = try library.files(of: book.id!)
            chapters[book.id!] = try library.chapters(of: book.id!)
            bookmarks[book.id!] = try library.bookmarks(of: book.id!)
        }
        self.files = files
        self.chapters = chapters
        self.bookmarks = bookmarks
        currentBook = try library.currentBook()
    }
}

/// Runs the sqlite3 shell on `path` (an independent reader of the file); nil when sqlite3 isn't installed.
func sqlite3(_ path: String, _ sql: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String]? {
    guard Subprocess.findExecutable("sqlite3") != nil else { return nil }
    let result = try await Subprocess.run("sqlite3", ["-bail", "-noheader", "-list", path, sql], timeout: .seconds(30))
    #expect(result.status == 0, "sqlite3: \(result.stderr)", sourceLocation: sourceLocation)
    return result.stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
}

/// Runs a command that must succeed (mount, umount, ...); returns its status and standard error.
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stderr: String) {
    let result = try Subprocess.run(executable, arguments, timeout: .seconds(30))
    return (result.status, result.stderr)
}

var isRoot: Bool { geteuid() == 0 }

/// Runs `body` with a 1 MB tmpfs mounted in a fresh temporary directory (its path given), unmounted after.
/// 1 MB: with 512 KB a library's setup itself hits the full disk (after the migrations the WAL is ~330 KB, most of it
/// the schema's pages written again by each migration, and the -shm 32 KB; every transaction appends pages to the WAL).
func withSmallDisk(_ body: (String) throws -> Void) throws {
    let dir = try TemporaryDirectory(prefix: "lectern-library")
    let mountPoint = dir.path + "/tiny"
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
    let mount = try run("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint])
    try #require(mount.status == 0, "mount tmpfs: \(mount.stderr)")
    defer {
        if (try? run("umount", [mountPoint]))?.status != 0 { _ = try? run("umount", ["-l", mountPoint]) }
    }
    try body(mountPoint)
}

/// Whether this process may mount (a tmpfs, a read-only bind mount): root with CAP_SYS_ADMIN. Tried once.
let canMount: Bool = {
    guard isRoot, let dir = try? TemporaryDirectory(prefix: "lectern-mount-probe") else { return false }
    guard let mounted = try? run("mount", ["-t", "tmpfs", "-o", "size=16k", "tmpfs", dir.path]), mounted.status == 0 else { return false }
    if (try? run("umount", [dir.path]))?.status != 0 { _ = try? run("umount", ["-l", dir.path]) }
    return true
}()

/// Whether root can make a file immutable (`chattr +i`) where the temporary directories are. Tried once.
let canMakeImmutable: Bool = {
    guard isRoot, let dir = try? TemporaryDirectory(prefix: "lectern-chattr-probe") else { return false }
    let file = dir.path + "/probe"
    guard FileManager.default.createFile(atPath: file, contents: Data()),
          let result = try? run("chattr", ["+i", file]), result.status == 0 else { return false }
    _ = try? run("chattr", ["-i", file])
    return true
}()

/// A SplitMix64 generator, so a failing random input can be made again.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
