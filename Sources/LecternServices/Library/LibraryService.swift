import DBus
import Foundation
import LecternBooks
import LecternCore
import LecternLibrary
import Logging
import Synchronization

/// Lectern's own D-Bus API on /org/lectern/Lectern1: `org.lectern.Library1` (shelves, books, import,
/// queries, the current book), `org.lectern.Bookmarks1` and `org.lectern.History1` (undo, the listening history and
/// statistics). Documented in dbus/org.lectern.Library1.xml and dbus/org.lectern.History1.xml.
///
/// This file holds the object: what it publishes (properties, signals) and the retry of unsaved writes. Each
/// interface's methods are in LibraryService+Library1.swift and +Bookmarks1.swift, which decode the arguments and
/// announce the changes; what a call does beyond the library is in LibraryRules.swift, import jobs in
/// ImportJobs.swift, and the records as D-Bus values in LibraryService+Values.swift.
///
/// Ids are int64; 0 means "none" (the top level for shelves). Every change a client would show is
/// announced: ShelvesChanged, BookChanged(id), BookRemoved(id), BookmarksChanged(book), Import* signals,
/// and CurrentBook through PropertiesChanged.
public final class LibraryService: Sendable {
    public static let path = ObjectPath("/org/lectern/Lectern1")!
    public static let libraryInterface = "org.lectern.Library1"
    static let bookmarksInterface = "org.lectern.Bookmarks1"

    let library: Library
    /// Runs the writes off the cooperative pool, on the database's writer thread.
    let writer: LibraryWriter
    public let imports: ImportJobs
    let logger: Logger
    /// Set once the object is exported.
    public let object = Mutex<ExportedObject?>(nil)
    /// Wakes the retry loop when writes start failing: it sleeps, with no timer, while they work.
    private let writesFailed = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// Told the number of books after it may have changed (MPRIS PlaylistCount follows it).
    public let bookCountChanged: @Sendable (Int) -> Void
    /// Told the books an import wrote (the current one may have files at new paths).
    public let booksImported: @Sendable ([Int64]) -> Void

    /// Told the title of a bookmark a client added (a spoken prompt says it).
    let bookmarkAdded: @Sendable (String) -> Void

    public init(library: Library, writer: LibraryWriter, importer: Importer, logger: Logger,
         bookCountChanged: @escaping @Sendable (Int) -> Void, booksImported: @escaping @Sendable ([Int64]) -> Void,
         bookmarkAdded: @escaping @Sendable (String) -> Void = { _ in }) {
        self.bookmarkAdded = bookmarkAdded
        self.library = library
        self.writer = writer
        imports = ImportJobs(library: library, importer: importer, logger: logger)
        self.logger = logger
        self.bookCountChanged = bookCountChanged
        self.booksImported = booksImported
    }

    // MARK: - Signals

    func emit(_ interface: String, _ signal: String, _ arguments: [DBusValue] = []) {
        guard let object = object.withLock({ $0 }) else { return }
        try? object.emit(interface, signal, arguments)
    }

    /// Publishes the number of books after an import or a delete (and OfflineBooks and MissingFiles): read here, on
    /// the library's reader threads before the caller goes on, so that `Get BookCount` and `PlaylistCount` are
    /// answered from the stored value, without SQLite on the I/O thread.
    func refreshBookCount() async {
        await refreshAvailability()
        guard let count = try? await library.reading({ try $0.bookCount() }) else { return }
        object.withLock { $0 }?.update(Self.libraryInterface, ["BookCount": .uint32(UInt32(clamping: count))])
        bookCountChanged(count)
    }

    /// A book changed: through a client's call, or by the daemon itself (e.g. marked finished).
    public func bookChanged(_ id: Int64) { emit(Self.libraryInterface, "BookChanged", [.int64(id)]) }

    /// Files of `books` went missing or came back, or the books went offline or came back: BookChanged for each,
    /// and OfflineBooks and MissingFiles again.
    public func availabilityChanged(_ books: [Int64]) async {
        for book in books { bookChanged(book) }
        await refreshAvailability()
    }

    /// Publishes how many books are offline and how many files are missing, read on the library's reader threads.
    func refreshAvailability() async {
        guard let counts = try? await library.reading({ try $0.availability() }) else { return }
        object.withLock { $0 }?.update(Self.libraryInterface, Self.availabilityProperties(counts))
    }

    public static func availabilityProperties(_ counts: LibraryAvailability) -> [String: DBusValue] {
        ["OfflineBooks": .uint32(UInt32(clamping: counts.offlineBooks)), "MissingFiles": .uint32(UInt32(clamping: counts.missingFiles))]
    }

    /// A book's bookmarks changed: through a client's call, or by the daemon itself (the sleep timer, an unplug).
    public func bookmarksChanged(_ book: Int64) { emit(Self.bookmarksInterface, "BookmarksChanged", [.int64(book)]) }

    /// Whether changes can be saved changed (CanSave, LastError): told once per change, not per failed write.
    public func healthChanged(_ health: LibraryHealth) {
        if !health.canSave { writesFailed.continuation.yield() }
        if health.canSave {
            logger.notice("the library can be written again", metadata: ["unsaved": "\(health.unsaved)"])
        } else {
            logger.error("library changes can't be saved; positions are kept in memory until they can",
                         metadata: ["error": "\(health.lastError)"])
        }
        object.withLock { $0 }?.update(Self.libraryInterface, Self.healthProperties(health))
    }

    public static func healthProperties(_ health: LibraryHealth) -> [String: DBusValue] {
        ["CanSave": .boolean(health.canSave), "LastError": .string(health.lastError)]
    }

    /// Writes what was kept in memory while the database couldn't be written, every few seconds, until cancelled:
    /// positions saved while paused reach the disk once it works again without waiting for the next save. While
    /// writes work (or nothing can ever be written, the database being read-only), it waits for a failure, with no
    /// timer. While they fail it looks every 2 s even when nothing is kept yet: a failure is told once, and the
    /// first failed write may be one that isn't kept (a setting), the position kept later failing the same way.
    public func retryUnsavedWrites() async {
        var failed = writesFailed.stream.makeAsyncIterator()
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(2))
            let health = library.health
            if library.isReadOnly || (health.canSave && health.unsaved == 0) {
                if await failed.next() == nil { return }  // cancelled
            } else if health.unsaved > 0 {
                _ = await writer.write { $0.retryUnsavedWrites() }
            }
            // (The failure is told before the write it lost is kept: hence the sleep before looking, not after.)
        }
    }

    /// The current book changed (activation, restore, a client opening other files).
    public func currentBookChanged(_ book: Book?) {
        object.withLock { $0 }?.update(Self.libraryInterface, ["CurrentBook": .int64(book?.id ?? 0)])
    }

    // MARK: - Declarations

    /// Library1, Bookmarks1 and History1, declared in their own files.
    /// `rules`: what the calls do beyond the library, with the book session.
    public func interfaces(_ rules: LibraryRules) -> [Interface] {
        [libraryInterfaceDeclaration(rules), bookmarksInterfaceDeclaration(rules), historyInterfaceDeclaration(rules)]
    }

    /// A method that reads the library, and encodes its reply, off the call queue: other callers aren't kept waiting
    /// (Method.deferred). Its turn on the queue comes after the calls that arrived before it have returned, so the
    /// read, which begins after that turn, sees all they wrote; it may also see what later calls wrote by the time it
    /// begins. Each read is one transaction: a reply shows the library at one moment. The read and the encoding run on
    /// the library's reader threads (``Library/reading(_:)``), not on the cooperative pool: many listings at once
    /// keep no handler waiting for a thread.
    func deferred(_ name: String, in inputs: [(String, DBusType)] = [], out outputs: [(String, DBusType)] = [],
                  _ body: @escaping @Sendable (MethodCall, Library) throws -> [DBusValue]) -> Method {
        Method.deferred(name, in: inputs, out: outputs) { call in
            {
                do { return try await self.library.reading { try body(call, $0) } } catch let error as LibraryError { throw Self.busError(error) }
            }
        }
    }

    /// A method whose library errors become org.lectern.Error.* replies.
    func method(_ name: String, in inputs: [(String, DBusType)] = [], out outputs: [(String, DBusType)] = [],
                _ body: @escaping @Sendable (MethodCall) async throws -> [DBusValue]) -> Method {
        Method(name, in: inputs, out: outputs) { call in try await Self.busErrors { try await body(call) } }
    }

    /// A method that activates a book (ActivateBook, JumpToBookmark, MPRIS ActivatePlaylist): `body` decodes the call
    /// and begins the activation in its turn on the call queue (``BookSession/activation(of:play:)``). What it
    /// leaves, an activation waiting for an import to find the book's files, runs off the queue, other clients'
    /// calls answered meanwhile, and the reply waits for it (Method.deferred). Library errors become
    /// org.lectern.Error.* replies.
    static func activating(_ name: String, in inputs: [(String, DBusType)],
                           _ body: @escaping @Sendable (MethodCall) async throws -> BookSession.PendingActivation?) -> Method {
        Method.deferred(name, in: inputs) { call in
            let pending = try await busErrors { try await body(call) }
            return {
                try await busErrors { try await pending?() }
                return []
            }
        }
    }

    /// `body`, its library errors thrown as org.lectern.Error.* replies.
    static func busErrors<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LibraryError {
            throw busError(error)
        }
    }

    static func busError(_ error: LibraryError) -> BusError {
        switch error {
        case .notFound(let message): return BusError(name: "org.lectern.Error.NotFound", message: message)
        case .invalidArgument(let message): return BusError(name: "org.lectern.Error.InvalidArgument", message: message)
        case .unavailable(let message): return BusError(name: "org.lectern.Error.Unavailable", message: message)
        }
    }
}
