import CDBus
import Foundation
import GRDB
import LecternLibrary
import Synchronization
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

// The library benchmarks (`--library`, `--library-only`): Lectern alone, since mpv has no library.
//
// 1. Import: `importFiles` generated MP3 files in `importFolders` folders (a tone and an album tag per folder), imported
//    over D-Bus into a fresh database; Import → ImportFinished, the daemon's memory and CPU meanwhile, and
//    MPRIS Gets issued during the import (against Gets on the idle daemon).
//    Then the shapes of a library (`shapeFiles` files as one-file books, and as books of 20 files), each imported into a
//    fresh database by a fresh lecternd: files per second by how many files a book has.
// 2. A big library (`books` books of `filesPerBook` files on 100 shelves in 10 parent shelves), written
//    directly through LecternLibrary; then lecternd on it: ListBooks, ListBooksPage, Search, ListShelves, Find,
//    Group, GetPlaylists, each against the same LecternLibrary call in this process (the same SQL, the same
//    transaction); and MPRIS Gets while another client loops on the largest page of a listing or a search.
// Method calls, which take their turn on the call queue and run a handler (PlayPause through the player actor,
// ListShelves and GetBook reading the library), are timed during the import and while clients list: how long a
// call waits behind the daemon's other work. `--library-waits` runs these alone.

struct LibrarySettings {
    var calls = 200
    var warmup = 20
    /// A series stops early after this long (with at least `minimumCalls` calls).
    var seriesBudget: Duration = .seconds(30)
    var minimumCalls = 10
    /// Warm-up stops early after this long (with at least 2 calls).
    var warmupBudget: Duration = .seconds(5)
    var importFiles = 1000
    var importFolders = 50
    /// The generated files' tags as ID3v1 alone (older rips), not ID3v2.
    var importID3v1 = false
    /// Files of each shape of library imported (0: none), and the files a book of each shape has.
    var shapeFiles = 10_000
    var shapes = [1, 20]
    /// Whether to run the big library after the import (not with `--import-only`).
    var bigLibrary = true
    var books = 10_000
    var filesPerBook = 10
    var parentShelves = 10
    var shelvesPerParent = 10
    var authors = 1000
    /// Pause between the Gets issued during an import (and on the idle daemon, for comparison).
    var getPace: Duration = .milliseconds(10)
    /// Only how long calls wait (`--library-waits`): the import, then the big library's rows of calls made while
    /// other clients list, without its series of each call alone.
    var waitsOnly = false
    /// The clients that list at once while calls are timed (the rows "while N clients call ... in a loop").
    var listers = 4
}

struct ImportRun {
    var seconds = Double.nan
    var importReplyMs = Double.nan
    var books = 0
    var error = ""
    var progressSignals = 0
    var cpu: CPUWindow.Result?
    var peakRSSKB = 0
    var hwmAfterKB = 0
    var rssAfterKB = 0
    var gets = Samples([])
    var getErrors = 0
    /// PlayPause (nothing loaded: the player answers with an error) and ListShelves(0), each made after a Get.
    var playPauses = Samples([])
    var listShelves = Samples([])
    /// Calls that got no reply at all (a timeout).
    var unanswered = 0
}

struct ImportResult {
    var files = 0
    var folders = 0
    var fileBytes = 0
    var generateSeconds = Double.nan
    /// FileFingerprint.of over every generated file (in the page cache), µs per file.
    var fingerprintMicros = Double.nan
    var startupMs = Double.nan
    var rssBeforeKB = 0
    var idleGets = Samples([])
    var idlePlayPauses = Samples([])
    var idleListShelves = Samples([])
    var first = ImportRun()
    var again: ImportRun?
    var bookCount = 0
}

/// An import of files in books of `filesPerBook` files each (a folder and an album tag a book), into a fresh database.
struct ShapeResult {
    var filesPerBook = 0
    var files = 0
    var folders = 0
    var generateSeconds = Double.nan
    var run = ImportRun()
}

struct CallSeries {
    var name = ""
    var dbus = Samples([])
    var errors = 0
    var replyBytes = 0
    var items = 0
    var library: Samples?
}

struct BigLibraryResult {
    var shelves = 0
    var books = 0
    var files = 0
    var populateSeconds = Double.nan
    var firstThousandSeconds = Double.nan
    var lastThousandSeconds = Double.nan
    var openBytes: (main: Int, wal: Int, shm: Int) = (0, 0, 0)
    var closedBytes: (main: Int, wal: Int, shm: Int) = (0, 0, 0)
    var pageSize = 0, pageCount = 0
    var startupMs = Double.nan
    /// `PRAGMA quick_check` of the closed file (what Library(path:) runs at open), ms: each of 3 runs.
    var quickCheckMs: [Double] = []
    var idleRSSKB = 0
    var endRSSKB = 0, endHWMKB = 0
    var series: [CallSeries] = []
}

struct LibraryResult {
    var importResult: ImportResult?
    var shapes: [ShapeResult] = []
    var big: BigLibraryResult?
    var notes: [String] = []
}

extension MessageReader {
    /// The number of elements of the first argument, when it is an array.
    func firstArrayCount() -> Int? {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0,
              dbus_message_iter_get_arg_type(&iter) == BusClient.typeCode("a") else { return nil }
        return Self.count(&iter)
    }

    static func count(_ array: inout DBusMessageIter) -> Int {
        var element = DBusMessageIter()
        dbus_message_iter_recurse(&array, &element)
        var n = 0
        while dbus_message_iter_get_arg_type(&element) != 0 {
            n += 1
            guard dbus_message_iter_next(&element) != 0 else { break }
        }
        return n
    }

    func firstUInt32() -> UInt32? {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0,
              dbus_message_iter_get_arg_type(&iter) == BusClient.typeCode("u") else { return nil }
        var value: UInt32 = 0
        dbus_message_iter_get_basic(&iter, &value)
        return value
    }

    /// ImportFinished(u job, ax books, s error).
    func importFinished() -> (job: UInt32, books: Int, error: String)? {
        guard isSignal("org.lectern.Library1", "ImportFinished") else { return nil }
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0,
              dbus_message_iter_get_arg_type(&iter) == BusClient.typeCode("u") else { return nil }
        var job: UInt32 = 0
        dbus_message_iter_get_basic(&iter, &job)
        guard dbus_message_iter_next(&iter) != 0, dbus_message_iter_get_arg_type(&iter) == BusClient.typeCode("a")
        else { return nil }
        let books = Self.count(&iter)
        guard dbus_message_iter_next(&iter) != 0 else { return nil }
        return (job, books, Self.basicString(&iter) ?? "")
    }

    /// The size of the message as it travels on the bus (header and body), bytes.
    var wireSize: Int {
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var length: Int32 = 0
        guard dbus_message_marshal(message, &buffer, &length) != 0 else { return 0 }
        dbus_free(buffer)
        return Int(length)
    }
}

/// How many listings the other client finished, and whether it should stop; shared with its thread.
private final class ListingCount: Sendable {
    let state = Mutex<(done: Int, stop: Bool)>((0, false))
}

private let libraryName = "org.lectern.Lectern1"
private let libraryPath = "/org/lectern/Lectern1"
private let libraryInterface = "org.lectern.Library1"
private let mprisPath = "/org/mpris/MediaPlayer2"

private func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

private func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}

private func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Runs both library benchmarks.
func measureLibrary(lecternd: String, settings: LibrarySettings, work: TemporaryDirectory) -> LibraryResult {
    var result = LibraryResult()
    do {
        result.importResult = try measureImport(lecternd: lecternd, settings: settings, work: work)
    } catch {
        result.notes.append("library import: measurement failed: \(error)")
    }
    for filesPerBook in settings.shapeFiles > 0 ? settings.shapes : [] {
        do {
            result.shapes.append(try measureShape(filesPerBook: filesPerBook, lecternd: lecternd, settings: settings, work: work))
        } catch {
            result.notes.append("import of books of \(filesPerBook) files: measurement failed: \(error)")
        }
    }
    guard settings.bigLibrary else { return result }
    do {
        result.big = try measureBigLibrary(lecternd: lecternd, settings: settings, work: work,
                                           notes: &result.notes)
    } catch {
        result.notes.append("big library: measurement failed: \(error)")
    }
    return result
}

// MARK: - 1. Import

private func measureImport(lecternd: String, settings: LibrarySettings, work: TemporaryDirectory) throws -> ImportResult {
    var result = ImportResult()
    let folders = max(1, min(settings.importFolders, settings.importFiles))
    let root = work.appending("import")
    let templates = work.appending("import-templates")
    try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
    progress("library: generating \(settings.importFiles) MP3 files in \(folders) folders")
    let generateStart = ContinuousClock.now
    var made = 0
    for folder in 0..<folders {
        let count = settings.importFiles / folders + (folder < settings.importFiles % folders ? 1 : 0)
        guard count > 0 else { continue }
        let name = String(format: "Book %03d", folder + 1)
        // A tone of each folder's own: the same audio in two folders is one file to the library (a copy).
        let plain = templates.appendingPathComponent("plain.mp3")
        try AudioFiles.mp3(plain, seconds: 2, frequency: 200 + 7 * folder)
        let tagged = templates.appendingPathComponent("\(folder).mp3")
        try AudioFiles.ffmpeg(["-i", plain.path, "-c", "copy", "-metadata", "album=\(name)",
                               "-metadata", "artist=Import Author \(folder % 10)", "-metadata", "title=\(name)",
                               "-metadata", "genre=Audiobook"] + (settings.importID3v1 ? ["-write_id3v1", "true"] : [])
                              + [tagged.path])
        // ID3v1 alone: FFmpeg writes one only beside an ID3v2 tag, cut off here.
        if settings.importID3v1 { try AudioFiles.withoutID3v2(tagged).write(to: tagged) }
        let directory = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for index in 0..<count {
            let file = directory.appendingPathComponent(String(format: "%02d - Part %d.mp3", index + 1, index + 1))
            try FileManager.default.copyItem(at: tagged, to: file)
            result.fileBytes += fileSize(file.path)
            made += 1
        }
    }
    result.files = made
    result.folders = folders
    result.generateSeconds = seconds(ContinuousClock.now - generateStart)
    // What identifying a file costs an import: its fingerprint, as LecternLibrary computes it.
    let paths = try FileManager.default.subpathsOfDirectory(atPath: root.path).filter { $0.hasSuffix(".mp3") }
        .map { root.path + "/" + $0 }
    let fingerprintStart = ContinuousClock.now
    let fingerprinted = paths.compactMap { FileFingerprint.of($0) }.count
    result.fingerprintMicros = seconds(ContinuousClock.now - fingerprintStart) * 1e6 / Double(max(1, fingerprinted))

    let bus = try PrivateBus()
    defer { bus.stop() }
    let client = try BusClient(address: bus.address)
    try watchNames(client)
    let cache = work.appending("import-cache")
    try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
    let kind = PlayerKind.lectern(executable: lecternd, cacheDirectory: cache,
                                  database: work.appending("import-db/library.sqlite"))
    let player = try launch(kind, file: nil, bus: bus, environment: bus.environment, client: client,
                            log: work.appending("lectern-import.log"))
    defer { _ = player.stop() }
    result.startupMs = Double(player.startupNs) / 1e6
    sleepFor(.seconds(1))
    result.rssBeforeKB = ProcStats.memory(player.pid)?.rssKB ?? 0

    // Gets on the idle daemon, paced as during the import, and the method calls after them.
    for _ in 0..<settings.warmup { _ = client.timedCall(playbackStatusGet(player)) }
    var idle: [UInt64] = [], idlePlayPauses: [UInt64] = [], idleListShelves: [UInt64] = []
    for _ in 0..<settings.calls {
        sleepFor(settings.getPace)
        idle.append(client.timedCall(playbackStatusGet(player)).ns)
        idlePlayPauses.append(client.timedAnswer(playPauseCall(player)).ns)
        idleListShelves.append(client.timedAnswer(listShelvesCall()).ns)
    }
    result.idleGets = Samples(idle)
    result.idlePlayPauses = Samples(idlePlayPauses)
    result.idleListShelves = Samples(idleListShelves)

    let rule = "type='signal',path='\(libraryPath)',interface='\(libraryInterface)'"
    try client.addMatch(rule)
    defer { client.removeMatch(rule) }

    result.first = try importOnce(root, files: made, label: "import", client: client, player: player, settings: settings)
    result.again = try importOnce(root, files: made, label: "import again (same folder, nothing changed)", client: client,
                                  player: player, settings: settings)
    let listReply = try client.call(BusClient.methodCall(libraryName, libraryPath, libraryInterface, "ListBooks",
                                                         [.int64(0), .bool(true)]))
    result.bookCount = MessageReader(listReply).firstArrayCount() ?? 0
    dbus_message_unref(listReply)
    return result
}

/// Imports `root` (`files` audio files) over D-Bus into lecternd's library, timing Import → ImportFinished, and makes a
/// timed MPRIS Get, PlayPause and ListShelves whenever no signal came for `settings.getPace`.
private func importOnce(_ root: URL, files: Int, label: String, client: BusClient, player: RunningPlayer,
                        settings: LibrarySettings) throws -> ImportRun {
    progress("library: \(label) of \(root.path) (\(files) files), Gets every \(settings.getPace) meanwhile")
    var run = ImportRun()
    client.drain()
    let cpu = CPUWindow(player.pid)
    let start = now()
    let reply = try client.call(BusClient.methodCall(libraryName, libraryPath, libraryInterface, "Import",
                                                     [.string(root.path), .string("")]))
    run.importReplyMs = Double(now() - start) / 1e6
    let reader = MessageReader(reply)
    let job = reader.firstUInt32()
    let failure = dbus_message_get_type(reply) == 3 ? reader.strings().first ?? "?" : nil
    dbus_message_unref(reply)
    if let failure { throw BenchFailure("Import failed: \(failure)") }
    guard let job else { throw BenchFailure("Import: no job number in the reply") }

    var gets: [UInt64] = [], playPauses: [UInt64] = [], listShelvesTimes: [UInt64] = []
    var finishedAt: UInt64?
    var lastSample = UInt64(0)
    let deadline = start + 600 * 1_000_000_000
    while finishedAt == nil, now() < deadline {
        let arrived = client.waitFor(timeout: settings.getPace) { message in
            let m = MessageReader(message)
            if m.isSignal(libraryInterface, "ImportProgress") { run.progressSignals += 1 }
            guard let finished = m.importFinished(), finished.job == job else { return false }
            run.books = finished.books
            run.error = finished.error
            return true
        }
        if let arrived {
            finishedAt = arrived
            break
        }
        if !player.process.isRunning { throw BenchFailure("lecternd exited during the import:\n\(player.logTail)") }
        let t = now()
        if t - lastSample >= 50_000_000, let m = ProcStats.memory(player.pid) {
            run.peakRSSKB = max(run.peakRSSKB, m.rssKB)
            lastSample = t
        }
        let (ns, ok) = client.timedCall(playbackStatusGet(player))
        gets.append(ns)
        if !ok { run.getErrors += 1 }
        let played = client.timedAnswer(playPauseCall(player))
        let listed = client.timedAnswer(listShelvesCall())
        playPauses.append(played.ns)
        listShelvesTimes.append(listed.ns)
        run.unanswered += (played.answered ? 0 : 1) + (listed.answered ? 0 : 1)
    }
    guard let finishedAt else { throw BenchFailure("no ImportFinished within 600 s") }
    run.seconds = Double(finishedAt - start) / 1e9
    run.cpu = cpu.finish()
    if let m = ProcStats.memory(player.pid) {
        run.peakRSSKB = max(run.peakRSSKB, m.rssKB)
        (run.rssAfterKB, run.hwmAfterKB) = (m.rssKB, m.hwmKB)
    }
    run.gets = Samples(gets)
    run.playPauses = Samples(playPauses)
    run.listShelves = Samples(listShelvesTimes)
    return run
}

/// `settings.shapeFiles` files in books of `filesPerBook` (a folder each, the files tagged with the book's album),
/// imported by a fresh lecternd into a fresh database. Every file's audio is its own (a copy of a file is left out of
/// an import): the same 2 s of MP3 with four bytes of its last frame set to the file's number.
private func measureShape(filesPerBook: Int, lecternd: String, settings: LibrarySettings,
                          work: TemporaryDirectory) throws -> ShapeResult {
    var result = ShapeResult(filesPerBook: filesPerBook)
    let name = "shape-\(filesPerBook)"
    let root = work.appending(name)
    let templates = work.appending(name + "-template")
    try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
    result.folders = (settings.shapeFiles + filesPerBook - 1) / filesPerBook
    progress("library: generating \(settings.shapeFiles) MP3 files as \(result.folders) books of \(filesPerBook)")
    let generateStart = ContinuousClock.now
    let plain = templates.appendingPathComponent("plain.mp3")
    try AudioFiles.mp3(plain, seconds: 2, frequency: 300)
    let audio = [UInt8](try AudioFiles.withoutID3v2(plain))
    for index in 0..<settings.shapeFiles {
        let (book, part) = index.quotientAndRemainder(dividingBy: filesPerBook)
        let album = String(format: "Shape Book %05d", book + 1)
        let directory = root.appendingPathComponent(album)
        if part == 0 { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        var bytes = audio
        withUnsafeBytes(of: UInt32(index).littleEndian) { bytes.replaceSubrange(bytes.count - 8..<bytes.count - 4, with: $0) }
        let title = filesPerBook == 1 ? album : "\(album), part \(part + 1)"
        let tag = id3v2([("TALB", album), ("TPE1", "Shape Author \(book % 100)"), ("TIT2", title), ("TCON", "Audiobook"),
                         ("TRCK", "\(part + 1)")])
        let file = directory.appendingPathComponent(filesPerBook == 1 ? album + ".mp3" : String(format: "%02d.mp3", part + 1))
        try (tag + Data(bytes)).write(to: file)
        result.files += 1
    }
    result.generateSeconds = seconds(ContinuousClock.now - generateStart)

    let bus = try PrivateBus()
    defer { bus.stop() }
    let client = try BusClient(address: bus.address)
    try watchNames(client)
    let cache = work.appending(name + "-cache")
    try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
    let kind = PlayerKind.lectern(executable: lecternd, cacheDirectory: cache, database: work.appending(name + "-db/library.sqlite"))
    let player = try launch(kind, file: nil, bus: bus, environment: bus.environment, client: client,
                            log: work.appending("lectern-\(name).log"))
    defer { _ = player.stop() }
    sleepFor(.seconds(1))
    let rule = "type='signal',path='\(libraryPath)',interface='\(libraryInterface)'"
    try client.addMatch(rule)
    defer { client.removeMatch(rule) }
    result.run = try importOnce(root, files: result.files, label: "import of books of \(filesPerBook) files", client: client,
                                player: player, settings: settings)
    try? FileManager.default.removeItem(at: root)
    return result
}

/// An ID3v2.3 tag of text frames (ASCII text).
private func id3v2(_ frames: [(id: String, text: String)]) -> Data {
    var body: [UInt8] = []
    for frame in frames {
        let payload = [0] + Array(frame.text.utf8)  // encoding 0, ISO-8859-1
        body += Array(frame.id.utf8) + withUnsafeBytes(of: UInt32(payload.count).bigEndian, Array.init) + [0, 0] + payload
    }
    let n = body.count
    let size = [n >> 21, n >> 14, n >> 7, n].map { UInt8($0 & 0x7f) }  // syncsafe
    return Data(Array("ID3".utf8) + [3, 0, 0] + size + body)
}

private func playbackStatusGet(_ player: RunningPlayer) -> OpaquePointer {
    BusClient.methodCall(player.busName, mprisPath, "org.freedesktop.DBus.Properties", "Get",
                         [.string("org.mpris.MediaPlayer2.Player"), .string("PlaybackStatus")])
}

/// PlayPause, through the call queue to the player actor (with nothing loaded its reply is an error).
private func playPauseCall(_ player: RunningPlayer) -> OpaquePointer {
    BusClient.methodCall(player.busName, mprisPath, "org.mpris.MediaPlayer2.Player", "PlayPause")
}

/// ListShelves(0): a read of the library, through the call queue.
private func listShelvesCall() -> OpaquePointer {
    BusClient.methodCall(libraryName, libraryPath, libraryInterface, "ListShelves", [.int64(0)])
}

// MARK: - 2. Big library

/// A small deterministic generator (SplitMix64), so that every run builds the same library.
private struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func pick<T>(_ items: [T]) -> T { items[Int(next() % UInt64(items.count))] }
}

private let adjectives = ["Silent", "broken", "Golden", "Last", "hidden", "Élan of the", "Distant", "Crimson", "über",
                          "Winter", "Burning", "Lost", "Quiet", "Iron", "Seventh", "Pale", "Wandering", "Hollow",
                          "Bright", "Forgotten", "Northern", "Glass", "Secret", "Final", "Endless"]
private let nouns = ["River", "Kingdom", "Garden", "Machine", "Harbour", "Orchard", "Library", "Voyage", "Empire",
                     "Lighthouse", "Mountain", "Station", "Archive", "Cathedral", "Forest", "Signal", "Island",
                     "Clockwork", "Citadel", "Meadow", "Tide", "Compass", "Lantern", "Bridge", "Desert"]

private func authorName(_ index: Int) -> String { String(format: "Author %04d", index) }

/// Writes the big library through LecternLibrary; returns the ids of the leaf shelves.
private func populate(_ path: URL, settings: LibrarySettings, into result: inout BigLibraryResult) throws -> [Int64] {
    let library = try Library(path: path.path)
    var leaves: [Int64] = []
    let start = ContinuousClock.now
    for p in 0..<settings.parentShelves {
        for s in 0..<settings.shelvesPerParent {
            guard let id = try library.shelf(atPath: String(format: "Parent %02d/Shelf %02d-%02d", p, p, s)) else {
                throw BenchFailure("shelf(atPath:) returned nil")
            }
            leaves.append(id)
        }
    }
    result.shelves = settings.parentShelves * (settings.shelvesPerParent + 1)
    var random = SplitMix(state: 2026_11_21)
    var lap = ContinuousClock.now
    for i in 0..<settings.books {
        let shelfIndex = i % leaves.count
        let author = authorName(i % settings.authors)
        let title = "\(random.pick(adjectives)) \(random.pick(nouns)) \(random.next() % 1000)"
        let folder = String(format: "/srv/bench-library/Parent %02d/Shelf %02d/%05d %@", shelfIndex / settings.shelvesPerParent,
                            shelfIndex % settings.shelvesPerParent, i, title)
        let files = (0..<settings.filesPerBook).map { n in
            ImportedBook.File(path: folder + String(format: "/%02d.mp3", n + 1),
                              duration: 1_200_000_000 + Int64(random.next() % 600_000_000),
                              title: "\(title), part \(n + 1)", artist: author, album: title, albumArtist: author,
                              genre: "Audiobook", trackNumber: Int64(n + 1))
        }
        let book = ImportedBook(sourcePath: folder, albumKey: title, title: title, author: author, coverPath: nil,
                                files: files)
        _ = try library.importBook(book, into: leaves[shelfIndex])
        if (i + 1) % 1000 == 0 || i + 1 == settings.books {
            let t = ContinuousClock.now
            let lapSeconds = seconds(t - lap)
            if i + 1 == 1000 { result.firstThousandSeconds = lapSeconds }
            result.lastThousandSeconds = lapSeconds
            lap = t
            progress(String(format: "library: %d books written (last 1000: %.1f s)", i + 1, lapSeconds))
        }
    }
    result.populateSeconds = seconds(ContinuousClock.now - start)
    result.books = settings.books
    result.files = settings.books * settings.filesPerBook
    result.openBytes = (fileSize(path.path), fileSize(path.path + "-wal"), fileSize(path.path + "-shm"))
    return leaves
}

private func measureBigLibrary(lecternd: String, settings: LibrarySettings, work: TemporaryDirectory,
                               notes: inout [String]) throws -> BigLibraryResult {
    var result = BigLibraryResult()
    let database = work.appending("big-db/library.sqlite")
    progress("library: writing \(settings.books) books × \(settings.filesPerBook) files through LecternLibrary")
    let leaves = try populate(database, settings: settings, into: &result)  // the Library is closed on return
    result.closedBytes = (fileSize(database.path), fileSize(database.path + "-wal"), fileSize(database.path + "-shm"))

    // The reference in this process: the same LecternLibrary calls. The file's figures through a plain connection.
    let library = try Library(path: database.path)
    let raw = try DatabaseQueue(path: database.path)
    try raw.read { db in
        result.pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
        result.pageCount = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
    }
    for _ in 0..<3 {
        let start = now()
        let report = try raw.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
        result.quickCheckMs.append(Double(now() - start) / 1e6)
        if report != ["ok"] { notes.append("quick_check of the big library: \(report.prefix(3))") }
    }

    let bus = try PrivateBus()
    defer { bus.stop() }
    let client = try BusClient(address: bus.address)
    try watchNames(client)
    let cache = work.appending("big-cache")
    try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
    let kind = PlayerKind.lectern(executable: lecternd, cacheDirectory: cache, database: database)
    let player = try launch(kind, file: nil, bus: bus, environment: bus.environment, client: client,
                            log: work.appending("lectern-big.log"))
    defer { _ = player.stop() }
    result.startupMs = Double(player.startupNs) / 1e6
    sleepFor(.seconds(1))
    result.idleRSSKB = ProcStats.memory(player.pid)?.rssKB ?? 0

    func timeSeries(_ body: () throws -> Void) rethrows -> Samples {
        let warmupEnd = ContinuousClock.now + settings.warmupBudget
        for i in 0..<settings.warmup {
            if i >= 2, ContinuousClock.now > warmupEnd { break }
            try body()
        }
        var values: [UInt64] = []
        let deadline = ContinuousClock.now + settings.seriesBudget
        for i in 0..<settings.calls {
            if i >= settings.minimumCalls, ContinuousClock.now > deadline { break }
            let start = now()
            try body()
            values.append(now() - start)
        }
        return Samples(values)
    }

    func series(_ name: String, expect: Int?, _ make: () -> OpaquePointer, library libraryCall: () throws -> Int) throws -> CallSeries {
        progress("library: \(name), \(settings.warmup) + \(settings.calls) calls (D-Bus, LecternLibrary)")
        var s = CallSeries(name: name)
        let reply = try client.call(make(), timeoutMs: 60_000)
        s.replyBytes = MessageReader(reply).wireSize
        s.items = MessageReader(reply).firstArrayCount() ?? 0
        dbus_message_unref(reply)
        if let expect, s.items != expect { notes.append("\(name): \(s.items) items in the reply, expected \(expect)") }
        var errors = 0
        s.dbus = timeSeries {
            let (_, ok) = client.timedCall(make(), timeoutMs: 60_000)
            if !ok { errors += 1 }
        }
        s.errors = errors
        let libraryItems = try libraryCall()
        if libraryItems != s.items { notes.append("\(name): D-Bus \(s.items) items, LecternLibrary \(libraryItems)") }
        s.library = try timeSeries { _ = try libraryCall() }
        return s
    }

    let shelf = leaves[0]
    let perShelf = settings.books / leaves.count + (settings.books % leaves.count > 0 ? 1 : 0)
    let firstPage = min(Library.defaultPageSize, settings.books)
    // Pages sorted by the database, at the start and 90 % of the way into the listing; the largest page last.
    let deep = max(0, settings.books * 9 / 10)
    @Sendable func listPage(_ order: BookSort, _ index: Int, _ size: Int) -> OpaquePointer {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "ListBooksPage",
                             [.int64(0), .bool(true), .string(order.rawValue), .uint32(UInt32(index)), .uint32(UInt32(size))])
    }
    // Full-text search: an author's name.
    let author = authorName(42 % settings.authors)
    let booksPerAuthor = settings.books / settings.authors + (42 % settings.authors < settings.books % settings.authors ? 1 : 0)
    @Sendable func searchCall(_ text: String, byAuthor: Bool, _ offset: Int, _ size: Int) -> OpaquePointer {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "Search",
                             [.string(text), .stringVardict(byAuthor ? [("author", author)] : []), .uint32(UInt32(offset)),
                              .uint32(UInt32(size))])
    }

    // Other callers while clients loop on a heavy call (the largest page of a listing or of a search): `clients` other
    // connections (one by default) make it again and again, each on a thread of its own, and this one times a call
    // (MPRIS Get(PlaybackStatus), ListShelves(0), PlayPause, GetBook), paced like the Gets during the import. With
    // `anyReply`, an error reply counts as an answer (PlayPause with nothing loaded); only no reply is an error.
    func whileLooping(_ name: String, clients: Int = 1, anyReply: Bool = false, on loop: @escaping @Sendable () -> OpaquePointer,
                      _ make: () -> OpaquePointer) -> CallSeries {
        progress("library: \(name)")
        let listings = ListingCount()
        let address = bus.address
        let listers = (0..<max(1, clients)).map { _ in
            Thread {
                guard let other = try? BusClient(address: address) else { return }
                while !listings.state.withLock({ $0.stop }) {
                    _ = other.timedCall(loop(), timeoutMs: 60_000)
                    listings.state.withLock { $0.done += 1 }
                }
            }
        }
        listers.forEach { $0.start() }
        sleepFor(.milliseconds(50))
        var s = CallSeries(name: name)
        var values: [UInt64] = []
        var errors = 0
        // Until the other client has made its call 5 times and this one `calls` (at least 20, at most the series budget).
        let deadline = ContinuousClock.now + settings.seriesBudget
        while values.count < 20
                || (listings.state.withLock({ $0.done }) < 5 || values.count < settings.calls) && ContinuousClock.now < deadline {
            sleepFor(settings.getPace)
            let (ns, ok) = anyReply ? client.timedAnswer(make(), timeoutMs: 60_000) : client.timedCall(make(), timeoutMs: 60_000)
            values.append(ns)
            if !ok { errors += 1 }
        }
        listings.state.withLock { $0.stop = true }
        while listers.contains(where: { !$0.isFinished }) { sleepFor(.milliseconds(10)) }
        s.dbus = Samples(values)
        s.errors = errors
        return s
    }
    let getStatus = {
        BusClient.methodCall(player.busName, mprisPath, "org.freedesktop.DBus.Properties", "Get",
                             [.string("org.mpris.MediaPlayer2.Player"), .string("PlaybackStatus")])
    }
    let largest = Library.maximumPageSize
    let loopedList = "ListBooksPage(0, true, title, 0, \(largest))"

    // Method calls, through the call queue, while `settings.listers` clients call the largest page of a listing or a
    // search in a loop: PlayPause (the player actor; an error reply, nothing being loaded) and GetBook (a read).
    func waitRows() {
        let listers = settings.listers
        let playPause = { BusClient.methodCall(player.busName, mprisPath, "org.mpris.MediaPlayer2.Player", "PlayPause") }
        let getBook = { BusClient.methodCall(libraryName, libraryPath, libraryInterface, "GetBook", [.int64(1)]) }
        let loops: [(String, @Sendable () -> OpaquePointer)] = [
            (loopedList, { listPage(.title, 0, largest) }),
            ("Search(\"part\", {}, 0, \(largest))", { searchCall("part", byAuthor: false, 0, largest) }),
        ]
        // The same calls with nobody else calling, paced the same: what they cost alone.
        for (name, make, anyReply) in [("PlayPause (nothing loaded: an error reply), no other client", playPause, true),
                                       ("GetBook(1), no other client", getBook, false)] {
            progress("library: \(name)")
            var alone = CallSeries(name: name)
            var values: [UInt64] = []
            for _ in 0..<settings.calls {
                sleepFor(settings.getPace)
                let (ns, ok) = anyReply ? client.timedAnswer(make()) : client.timedCall(make())
                values.append(ns)
                if !ok { alone.errors += 1 }
            }
            alone.dbus = Samples(values)
            result.series.append(alone)
        }
        for (looped, loop) in loops {
            result.series.append(whileLooping("PlayPause (nothing loaded: an error reply) while \(listers) clients call \(looped) in a loop",
                                              clients: listers, anyReply: true, on: loop, playPause))
            result.series.append(whileLooping("GetBook(1) while \(listers) clients call \(looped) in a loop",
                                              clients: listers, on: loop, getBook))
        }
    }
    if settings.waitsOnly {
        waitRows()
        if let m = ProcStats.memory(player.pid) { (result.endRSSKB, result.endHWMKB) = (m.rssKB, m.hwmKB) }
        if !player.process.isRunning { notes.append("lecternd exited during the big-library run:\n\(player.logTail)") }
        return result
    }

    result.series.append(try series("ListBooks(shelf, false), a shelf of \(perShelf) books", expect: min(perShelf, firstPage), {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "ListBooks", [.int64(shelf), .bool(false)])
    }, library: {
        let page = try library.books(in: shelf, recursive: false, sortedBy: .title, offset: 0, limit: Library.defaultPageSize)
        return page.books.count
    }))

    result.series.append(try series("ListBooks(0, true), the first \(firstPage) of every book", expect: firstPage, {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "ListBooks", [.int64(0), .bool(true)])
    }, library: {
        let page = try library.books(in: nil, recursive: true, sortedBy: .title, offset: 0, limit: Library.defaultPageSize)
        return page.books.count
    }))

    let pages = BookSort.allCases.flatMap { order in [(order, 0, 50), (order, deep, 50)] } + [(BookSort.title, 0, Library.maximumPageSize)]
    for (order, index, size) in pages {
        result.series.append(try series("ListBooksPage(0, true, \(order.rawValue), \(index), \(size))",
                                        expect: min(size, max(0, settings.books - index)), {
            listPage(order, index, size)
        }, library: {
            let page = try library.books(in: nil, recursive: true, sortedBy: order, offset: index, limit: size)
                return page.books.count
        }))
    }

    // Full-text search: title words, an author, a word with a filter, and a word of every book (pages of 50 at the
    // start and deep, and the largest page).
    let searches: [(text: String, byAuthor: Bool, offset: Int, size: Int, expect: Int?)] = [
        ("silent riv", false, 0, 50, nil),
        (author.lowercased(), false, 0, 50, booksPerAuthor),
        ("silent", true, 0, 50, nil),
        ("part", false, 0, 50, min(50, settings.books)),
        ("part", false, deep, 50, min(50, max(0, settings.books - deep))),
        ("part", false, 0, Library.maximumPageSize, min(Library.maximumPageSize, settings.books)),
    ]
    for search in searches {
        let described = search.byAuthor ? "{author: \"\(author)\"}" : "{}"
        result.series.append(try series("Search(\"\(search.text)\", \(described), \(search.offset), \(search.size))", expect: search.expect, {
            searchCall(search.text, byAuthor: search.byAuthor, search.offset, search.size)
        }, library: {
            let page = try library.search(search.text, search.byAuthor ? LibraryQuery(author: author) : LibraryQuery(),
                                          offset: search.offset, limit: search.size)
                return page.books.count
        }))
    }

    // The floor of the largest search page: the same reply, echoed by a peer that does nothing else with it.
    let echoName = "org.lectern.BenchEcho"
    let echo = try EchoPeer(address: bus.address, name: echoName) {
        searchCall("part", byAuthor: false, 0, Library.maximumPageSize)
    }
    defer { echo.stop() }
    var echoed = CallSeries(name: "the reply of Search(\"part\", {}, 0, \(Library.maximumPageSize)) from a peer that echoes it "
                            + "(floor: the bus's transport of the reply)")
    let echoCall = { BusClient.methodCall(echoName, "/", "org.lectern.BenchEcho", "Echo") }
    let echoReply = try client.call(echoCall(), timeoutMs: 60_000)
    (echoed.replyBytes, echoed.items) = (MessageReader(echoReply).wireSize, MessageReader(echoReply).firstArrayCount() ?? 0)
    dbus_message_unref(echoReply)
    echoed.dbus = timeSeries { _ = client.timedCall(echoCall()) }
    echo.stop()
    result.series.append(echoed)

    // A word of every book, another at each call: more than lecternd keeps the rankings of (4), so that each call
    // ranks its matches again, as the first page of a new search does.
    let common = ["part", "author", "audiobook", "parent", "shelf", "pa"]
    var calls = 0, libraryCalls = 0
    result.series.append(try series("Search(another word of every book at each call: \(common.joined(separator: ", ")), {}, 0, 50)",
                                    expect: min(50, settings.books), {
        defer { calls += 1 }
        return searchCall(common[calls % common.count], byAuthor: false, 0, 50)
    }, library: {
        defer { libraryCalls += 1 }
        return try library.search(common[libraryCalls % common.count], offset: 0, limit: 50).books.count
    }))

    result.series.append(whileLooping("MPRIS Get(PlaybackStatus) while another client calls \(loopedList) in a loop",
                                      on: { listPage(.title, 0, largest) }, getStatus))
    result.series.append(whileLooping("MPRIS Get(PlaybackStatus) while another client calls Search(\"part\", {}, 0, \(largest)) in a loop",
                                      on: { searchCall("part", byAuthor: false, 0, largest) }, getStatus))
    result.series.append(whileLooping("ListShelves(0) while another client calls \(loopedList) in a loop",
                                      on: { listPage(.title, 0, largest) }) {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "ListShelves", [.int64(0)])
    })
    waitRows()

    result.series.append(try series("ListShelves(0), \(settings.parentShelves) shelves", expect: settings.parentShelves, {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "ListShelves", [.int64(0)])
    }, library: {
        try library.shelves(in: nil).count
    }))

    // Find: a substring of the search table's authors (the book's and its files' artists), the first page.
    result.series.append(try series("Find({author: \"\(author)\"}), \(booksPerAuthor) books", expect: booksPerAuthor, {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "Find", [.stringVardict([("author", author)])])
    }, library: {
        let page = try library.search("", LibraryQuery(author: author), offset: 0, limit: Library.defaultPageSize)
        return page.books.count
    }))

    result.series.append(try series("Group({}, author), \(settings.authors) authors", expect: settings.authors, {
        BusClient.methodCall(libraryName, libraryPath, libraryInterface, "Group", [.stringVardict([]), .string("author")])
    }, library: {
        try library.group(LibraryQuery(), by: .author).count
    }))

    for ordering in BookSort.mprisOrderings {
        for index in [0, deep] {
            let expect = min(50, max(0, settings.books - index))
            result.series.append(try series("GetPlaylists(\(index), 50, \(ordering.name), false)", expect: expect, {
                BusClient.methodCall(player.busName, mprisPath, "org.mpris.MediaPlayer2.Playlists", "GetPlaylists",
                                     [.uint32(UInt32(index)), .uint32(50), .string(ordering.name), .bool(false)])
            }, library: {
                try library.books(sortedBy: ordering.sort, reversed: ordering.reversed, offset: index, limit: 50).count
            }))
        }
    }

    // The floor on this bus: a Peer.Ping answered by lecternd's D-Bus library.
    var ping = CallSeries(name: "Peer.Ping to lecternd (floor: no handler)")
    ping.dbus = timeSeries { _ = client.timedCall(BusClient.methodCall(libraryName, libraryPath,
                                                                       "org.freedesktop.DBus.Peer", "Ping")) }
    result.series.append(ping)

    if let m = ProcStats.memory(player.pid) { (result.endRSSKB, result.endHWMKB) = (m.rssKB, m.hwmKB) }
    if !player.process.isRunning { notes.append("lecternd exited during the big-library run:\n\(player.logTail)") }
    return result
}

// MARK: - Report

enum LibraryReport {
    static func ms(_ ns: UInt64) -> String {
        let v = Double(ns) / 1e6
        switch v {
        case 100...: return String(format: "%.0f", v)
        case 10...: return String(format: "%.1f", v)
        case 1...: return String(format: "%.2f", v)
        default: return String(format: "%.3f", v)
        }
    }
    static func mb(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
    static func triple(_ s: Samples) -> String {
        s.count == 0 ? "—" : "\(ms(s.p50)) / \(ms(s.p95)) / \(ms(s.p99))"
    }

    static func markdown(_ r: LibraryResult, settings: LibrarySettings) -> String {
        var out = "### Library (Lectern only: mpv has no library)\n\n"
        if let i = r.importResult {
            let tags = settings.importID3v1 ? "tagged in ID3v1 alone" : "tagged"
            out += "Import: \(i.files) generated MP3 files (2 s, \(tags): one album per folder), \(i.folders) folders, "
                + "\(LibraryReport.mb(i.fileBytes)) MB, into a fresh database (generated in "
                + String(format: "%.1f s", i.generateSeconds) + ").\n\n"
            out += "| metric | first import (fresh database) | import again (nothing changed) |\n|---|---|---|\n"
            func both(_ label: String, _ f: (ImportRun) -> String) {
                out += "| \(label) | \(f(i.first)) | \(i.again.map(f) ?? "—") |\n"
            }
            both("Import → ImportFinished, s") { String(format: "%.2f", $0.seconds) }
            both("files per second") { String(format: "%.0f", Double(i.files) / $0.seconds) }
            both("books in ImportFinished; error") { "\($0.books); \($0.error.isEmpty ? "none" : $0.error)" }
            both("Import call → its reply (job number), ms") { String(format: "%.2f", $0.importReplyMs) }
            both("ImportProgress signals") { "\($0.progressSignals)" }
            // utime+stime, not schedstat: the discoverer's threads end during the import, and schedstat
            // (summed over live threads) would miss them.
            both("lecternd CPU during the import (utime+stime), s; ms per file") { run in
                guard let c = run.cpu else { return "—" }
                return String(format: "%.2f (%.0f %% of one core); %.2f", c.cpuSeconds, c.percent,
                              c.cpuSeconds * 1000 / Double(i.files))
            }
            both("lecternd VmRSS before → peak (sampled every 50 ms) → after; VmHWM after, MB") { run in
                "\(Report.mb(i.rssBeforeKB)) → \(Report.mb(run.peakRSSKB)) → \(Report.mb(run.rssAfterKB)); "
                    + Report.mb(run.hwmAfterKB)
            }
            both("MPRIS Get(PlaybackStatus) during the import, p50 / p95 / p99 / max, ms (n; errors)") { run in
                "\(triple(run.gets)) / \(ms(run.gets.max)) (\(run.gets.count); \(run.getErrors))"
            }
            out += "| same Get on the idle daemon before, p50 / p95 / p99 / max, ms (n) | "
                + "\(triple(i.idleGets)) / \(ms(i.idleGets.max)) (\(i.idleGets.count)) | |\n"
            both("MPRIS PlayPause (a method call: the player actor; an error reply, nothing loaded) during the import, "
                 + "p50 / p95 / p99 / max, ms (n; unanswered, both calls)") { run in
                "\(triple(run.playPauses)) / \(ms(run.playPauses.max)) (\(run.playPauses.count); \(run.unanswered))"
            }
            both("Library1.ListShelves(0) (a method call reading the library) during the import, p50 / p95 / p99 / max, ms (n)") { run in
                "\(triple(run.listShelves)) / \(ms(run.listShelves.max)) (\(run.listShelves.count))"
            }
            out += "| same PlayPause; ListShelves(0) on the idle daemon before, p50 / p95 / p99 / max, ms | "
                + "\(triple(i.idlePlayPauses)) / \(ms(i.idlePlayPauses.max)); \(triple(i.idleListShelves)) / "
                + "\(ms(i.idleListShelves.max)) | |\n"
            out += "| books in the library afterwards (ListBooks(0, true)) | \(i.bookCount) | |\n"
            out += String(format: "| FileFingerprint.of per file (files in the page cache), µs | %.1f | |\n\n", i.fingerprintMicros)
        }
        if !r.shapes.isEmpty {
            out += "Import by the shape of the library: each a fresh lecternd and database, the files 2 s MP3s, a folder and "
                + "an album tag a book.\n\n"
            out += "| books of | files; books | Import → ImportFinished, s | files per second | books per second "
                + "| lecternd CPU, ms per file | MPRIS Get meanwhile, p50 / p99 / max, ms (n; errors) | error |\n"
                + "|---|---|---|---|---|---|---|---|\n"
            for shape in r.shapes {
                let run = shape.run
                let cpu = run.cpu.map { String(format: "%.2f", $0.cpuSeconds * 1000 / Double(shape.files)) } ?? "—"
                out += "| \(shape.filesPerBook) file\(shape.filesPerBook == 1 ? "" : "s") | \(shape.files); \(run.books) | "
                    + String(format: "%.2f | %.0f | %.0f", run.seconds, Double(shape.files) / run.seconds,
                             Double(shape.folders) / run.seconds)
                    + " | \(cpu) | \(ms(run.gets.p50)) / \(ms(run.gets.p99)) / \(ms(run.gets.max)) (\(run.gets.count); "
                    + "\(run.getErrors)) | \(run.error.isEmpty ? "none" : run.error) |\n"
            }
            out += "\n"
        }
        if let b = r.big {
            out += "Big library: \(b.books) books, \(b.files) files, \(b.shelves) shelves (\(settings.parentShelves) "
                + "× \(settings.shelvesPerParent) leaf shelves), written through LecternLibrary.importBook.\n\n"
            out += "| metric | value |\n|---|---|\n"
            out += String(format: "| writing it (importBook × %d, one transaction each), s | %.1f (%.0f books/s; "
                          + "first 1000 books %.2f s, last 1000 %.2f s) |\n", b.books, b.populateSeconds,
                          Double(b.books) / b.populateSeconds, b.firstThousandSeconds, b.lastThousandSeconds)
            out += "| database size while open: main + -wal + -shm, MB | \(mb(b.openBytes.main)) + \(mb(b.openBytes.wal)) "
                + "+ \(mb(b.openBytes.shm)) |\n"
            out += "| database size after closing (checkpointed), MB | \(mb(b.closedBytes.main)) + \(mb(b.closedBytes.wal)) "
                + "+ \(mb(b.closedBytes.shm)) (\(b.pageCount) pages of \(b.pageSize) B) |\n"
            out += String(format: "| lecternd start-up with it (spawn → MPRIS name), ms | %.1f |\n", b.startupMs)
            out += "| PRAGMA quick_check of the file (run by Library(path:) at open), ms, 3 runs | "
                + b.quickCheckMs.map { String(format: "%.0f", $0) }.joined(separator: ", ") + " |\n"
            out += "| lecternd VmRSS idle → after the calls; VmHWM, MB | \(Report.mb(b.idleRSSKB)) → "
                + "\(Report.mb(b.endRSSKB)); \(Report.mb(b.endHWMKB)) |\n\n"
            out += "| call (sequential, one client) | n | D-Bus p50 / p95 / p99, ms | reply: items, KB | "
                + "LecternLibrary in-process p50 / p99, ms | D-Bus ÷ LecternLibrary (p50) |\n|---|---|---|---|---|---|\n"
            for s in b.series {
                let errors = s.errors > 0 ? " (\(s.errors) errors)" : ""
                let reply = s.replyBytes > 0 ? "\(s.items), " + String(format: "%.1f", Double(s.replyBytes) / 1024) : "—"
                let lib = s.library.map { "\(ms($0.p50)) / \(ms($0.p99))" } ?? "—"
                let overLib = s.dbus.count > 0 ? s.library.map { Report.ratio(s.dbus.p50, $0.p50) } ?? "—" : "—"
                out += "| \(s.name) | \(s.dbus.count) | \(triple(s.dbus))\(errors) | \(reply) | \(lib) | \(overLib) |\n"
            }
        }
        for note in r.notes { out += "\nNote: \(note)\n" }
        return out
    }

    static func json(_ r: LibraryResult) -> [String: Any] {
        var root: [String: Any] = ["notes": r.notes]
        func run(_ x: ImportRun) -> [String: Any] {
            ["seconds": x.seconds, "importReplyMs": x.importReplyMs, "books": x.books, "error": x.error,
             "progressSignals": x.progressSignals, "cpuSeconds": x.cpu?.cpuSeconds ?? Double.nan,
             "peakRSSKB": x.peakRSSKB, "rssAfterKB": x.rssAfterKB, "hwmAfterKB": x.hwmAfterKB,
             "getsMs": x.gets.json(unit: 1e6), "getErrors": x.getErrors, "playPausesMs": x.playPauses.json(unit: 1e6),
             "listShelvesMs": x.listShelves.json(unit: 1e6), "unanswered": x.unanswered]
        }
        if let i = r.importResult {
            var o: [String: Any] = ["files": i.files, "folders": i.folders, "fileBytes": i.fileBytes,
                                    "startupMs": i.startupMs, "rssBeforeKB": i.rssBeforeKB,
                                    "idleGetsMs": i.idleGets.json(unit: 1e6), "first": run(i.first),
                                    "idlePlayPausesMs": i.idlePlayPauses.json(unit: 1e6),
                                    "idleListShelvesMs": i.idleListShelves.json(unit: 1e6),
                                    "filesPerSecond": Double(i.files) / i.first.seconds, "bookCount": i.bookCount,
                                    "fingerprintMicros": i.fingerprintMicros]
            if let again = i.again { o["again"] = run(again) }
            root["import"] = o
        }
        if !r.shapes.isEmpty {
            root["importShapes"] = r.shapes.map { shape -> [String: Any] in
                ["filesPerBook": shape.filesPerBook, "files": shape.files, "folders": shape.folders,
                 "generateSeconds": shape.generateSeconds, "import": run(shape.run),
                 "filesPerSecond": Double(shape.files) / shape.run.seconds]
            }
        }
        if let b = r.big {
            root["bigLibrary"] = [
                "shelves": b.shelves, "books": b.books, "files": b.files, "populateSeconds": b.populateSeconds,
                "firstThousandSeconds": b.firstThousandSeconds, "lastThousandSeconds": b.lastThousandSeconds,
                "openBytes": ["main": b.openBytes.main, "wal": b.openBytes.wal, "shm": b.openBytes.shm],
                "closedBytes": ["main": b.closedBytes.main, "wal": b.closedBytes.wal, "shm": b.closedBytes.shm],
                "pageSize": b.pageSize, "pageCount": b.pageCount, "startupMs": b.startupMs,
                "idleRSSKB": b.idleRSSKB, "endRSSKB": b.endRSSKB, "endHWMKB": b.endHWMKB,
                "calls": b.series.map { s -> [String: Any] in
                    ["name": s.name, "dbusMs": s.dbus.json(unit: 1e6), "errors": s.errors, "replyBytes": s.replyBytes,
                     "items": s.items, "libraryMs": s.library?.json(unit: 1e6) ?? NSNull()]
                },
            ] as [String: Any]
        }
        return root
    }
}
