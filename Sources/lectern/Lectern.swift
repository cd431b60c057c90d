import ArgumentParser
import DBus
import Foundation
import LecternVersion

/// `lectern`: the command-line client. Everything goes through the daemon's D-Bus API.
@main
struct Lectern: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lectern",
        abstract: "Control lecternd, the Lectern audiobook and music player daemon.",
        discussion: examples("lectern open ~/Audiobooks/Dune", "lectern status", "lectern skip -15", "lectern sleep 20m")
            + "\n\nExit status: 0 done; 1 lecternd refused (e.g. no such file, nothing loaded); 64 a usage error "
            + "(checked before lecternd is asked); 69 the bus or lecternd cannot be reached.",
        version: lecternVersion,
        subcommands: [Open.self, Status.self, Play.self, Pause.self, Toggle.self, Stop.self, Next.self, Previous.self,
                      Seek.self, Position.self, Volume.self,
                      Skip.self, Jump.self, ChapterCommand.self, Speed.self, SleepCommand.self, LyricsCommand.self, LoudnessCommand.self,
                      SkipPartsCommand.self,
                      CompressorCommand.self,
                      SkipSilenceCommand.self,
                      Say.self, PromptsCommand.self,
                      Import.self, ShelfCommand.self, BookCommand.self, BookmarkCommand.self, Find.self, ConfigCommand.self, Activate.self,
                      Undo.self, HistoryCommand.self, Stats.self])

    /// As ArgumentParser's, with a status of our own for each kind of ``CLIError``.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch let error as CLIError {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            Foundation.exit(error.status)
        } catch {
            exit(withError: error)
        }
    }
}

struct BusOptions: ParsableArguments {
    @Option(help: "D-Bus address of the bus lecternd is on (default: the session bus).")
    var busAddress: String?
}

// MARK: - Commands

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play a file, a folder of audio files, or a file:// URI.",
        discussion: examples("lectern open ~/Audiobooks/Dune", "lectern open part1.mp3", "lectern open file:///music/song.ogg"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "A path or file:// URI.") var target: String

    func run() async throws {
        try await Daemon.connect(bus).player("OpenUri", [.string(Self.uri(target))])
    }

    /// A path (relative to the working directory) or a URI, as a URI.
    static func uri(_ target: String) -> String {
        if target.contains("://") { return target }
        let url = URL(fileURLWithPath: target, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        return url.standardizedFileURL.absoluteString
    }
}

struct Activate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What the desktop entry runs: start lecternd if it is not running, and play files if given.",
        discussion: "Desktops that honour DBusActivatable call the daemon directly; this is for those that run Exec.\n\n"
            + examples("lectern activate", "lectern activate ~/Audiobooks/Dune"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "Paths or file:// URIs to play.") var targets: [String] = []

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        let application = (name: "org.lectern.Lectern", path: "/org/lectern/Lectern", interface: "org.freedesktop.Application")
        if targets.isEmpty {
            try await daemon.call(application.name, application.path, application.interface, "Activate", [.emptyVardict])
        } else {
            try await daemon.call(application.name, application.path, application.interface, "Open",
                                  [.strings(targets.map(Open.uri)), .emptyVardict])
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what is playing.",
        discussion: examples("lectern status", "lectern status --json", "lectern status --follow",
                             "lectern status --follow --json | jq .status"))
    @OptionGroup var bus: BusOptions
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "Keep showing it as it changes, from the daemon's signals (Ctrl-C ends): a line that redraws on a terminal; with --json, one object per line for each change.")
    var follow = false

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        if follow { return try await StatusFollower(daemon: daemon, json: json).run() }
        let report = try await StatusReport.fetch(from: daemon)
        print(json ? report.json : report.text)
    }
}

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play (resumes where it was paused), or play a book of the library, where it was left.",
        discussion: examples("lectern play", "lectern play Dune", "lectern play 12"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "A book: its id or (part of) its title.") var book: String?

    func run() async throws {
        let daemon = try await Daemon.connect(bus)
        guard let book else {
            try await daemon.player("Play")
            return
        }
        let id = try await daemon.resolveBook(book)
        try await daemon.library("ActivateBook", [.int64(id), .boolean(true)])
    }
}

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Pause.",
        discussion: examples("lectern pause"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await Daemon.connect(bus).player("Pause") }
}

struct Toggle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play if paused, pause if playing.",
        discussion: examples("lectern toggle"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await Daemon.connect(bus).player("PlayPause") }
}

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop.",
        discussion: examples("lectern stop"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await Daemon.connect(bus).player("Stop") }
}

struct Next: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to the next track.",
        discussion: examples("lectern next"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await Daemon.connect(bus).player("Next") }
}

struct Previous: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to the previous track.",
        discussion: examples("lectern previous"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await Daemon.connect(bus).player("Previous") }
}

struct Seek: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move by a number of seconds: +30 or -15.",
        discussion: examples("lectern seek +30", "lectern seek -15"))
    @OptionGroup var bus: BusOptions
    // Passthrough, so that "-15" is taken as a number rather than an option.
    @Argument(parsing: .captureForPassthrough, help: "Seconds, with a sign: +30, -15.") var offset: [String] = []

    func run() async throws {
        let offset = self.offset.filter { $0 != "--" }
        guard offset.count == 1, let seconds = Seconds.parse(offset[0]), offset[0].first == "+" || offset[0].first == "-" else {
            throw ValidationError("seek takes one signed number of seconds, e.g. +30 or -15")
        }
        try await Daemon.connect(bus).player("Seek", [.int64(seconds)])
    }
}

struct Position: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to a position in the current track, in seconds (or m:ss).",
        discussion: examples("lectern position 90", "lectern position 1:30"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "Seconds from the start of the track, e.g. 90 or 1:30.") var position: String

    func run() async throws {
        guard let microseconds = Seconds.parse(position), microseconds >= 0 else {
            throw ValidationError("position takes a number of seconds (or m:ss) from the start, e.g. 90 or 1:30")
        }
        let daemon = try await Daemon.connect(bus)
        let metadata = try await daemon.playerProperty("Metadata").stringKeyedDictionary ?? [:]
        guard let track = metadata["mpris:trackid"]?.objectPath else {
            throw CLIError("nothing is playing")
        }
        if let length = metadata["mpris:length"]?.int64, microseconds > length {
            throw CLIError("the track is only \(Seconds.format(length)) long")
        }
        try await daemon.player("SetPosition", [.objectPath(track), .int64(microseconds)])
    }
}

struct Volume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or set the volume (0 silent, 1 full; above 1 amplifies, up to 10, through a limiter: nothing clips).",
        discussion: examples("lectern volume", "lectern volume 0.5", "lectern volume 1.5", "lectern volume 150%"))
    @OptionGroup var bus: BusOptions
    // Passthrough, so that "-1" is a (refused) volume rather than an unknown option.
    @Argument(parsing: .captureForPassthrough, help: "The new volume, e.g. 0.5, or a percentage, e.g. 150%.") var volume: [String] = []

    func run() async throws {
        let values = volume.filter { $0 != "--" }
        guard values.count <= 1 else { throw ValidationError("volume takes one number, e.g. 0.5") }
        guard let text = values.first else {
            let daemon = try await Daemon.connect(bus)
            print(String(format: "%.2f", try await daemon.playerProperty("Volume").double ?? 0))
            return
        }
        let percent = text.hasSuffix("%")
        guard let number = Double(percent ? String(text.dropLast()) : text), case let volume = percent ? number / 100 : number,
              volume.isFinite, volume >= 0, volume <= 10 else {
            throw ValidationError("the volume is a number from 0 (silent) to 10, 1 being full volume, or 0% to 1000%; not \(text)")
        }
        try await Daemon.connect(bus).setPlayerProperty("Volume", .double(volume))
    }
}

// MARK: - Talking to the daemon

/// A failure the user should read, and the exit status it ends with (see `lectern --help`).
struct CLIError: Error, CustomStringConvertible {
    let description: String
    /// 1: lecternd refused or something was not found; 69 (EX_UNAVAILABLE): the bus or lecternd cannot be reached.
    let status: Int32
    init(_ description: String, unreachable: Bool = false) {
        self.description = description
        status = unreachable ? 69 : 1
    }
}

/// lecternd as the CLI sees it: addressed by Lectern's own bus name, whose owner also serves MPRIS.
struct Daemon {
    static let busName = "org.lectern.Lectern1"
    static let mprisPath = "/org/mpris/MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    let connection: BusConnection

    static func connect(_ options: BusOptions) async throws -> Daemon {
        let connection: BusConnection
        do {
            connection = try options.busAddress.map(BusConnection.init(address:)) ?? BusConnection.session()
        } catch {
            throw CLIError("cannot reach the D-Bus session bus: \(error)", unreachable: true)
        }
        let daemon = Daemon(connection: connection)
        let running = try await daemon.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                            "NameHasOwner", [.string(busName)]).first?.bool ?? false
        if !running {
            // Installed (`make install`), the bus starts it: D-Bus activation, as for any other client.
            do {
                _ = try await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                          member: "StartServiceByName", [.string(busName), .uint32(0)], timeout: .seconds(30))
            } catch let error as BusError where error.name == "org.freedesktop.DBus.Error.ServiceUnknown" {
                throw CLIError("lecternd is not running on this bus, and the bus cannot start it (install it with "
                               + "`make install`, or start it with `make run` or `lecternd`)", unreachable: true)
            } catch let error as BusError {
                throw CLIError("lecternd could not be started: \(error.message.isEmpty ? error.name : error.message)",
                               unreachable: true)
            }
            // Lectern's own object answers once the daemon has restored its book: what follows reads that book.
            // Opening it can take long on a machine busy starting a session: as long as the start itself may.
            _ = try await daemon.lecternProperty("org.lectern.Library1", "CurrentBook", timeout: .seconds(30))
        }
        return daemon
    }

    @discardableResult
    func player(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await call(Self.busName, Self.mprisPath, Self.playerInterface, method, arguments)
    }

    func playerProperty(_ name: String) async throws -> DBusValue {
        try await call(Self.busName, Self.mprisPath, "org.freedesktop.DBus.Properties", "Get",
                       [.string(Self.playerInterface), .string(name)]).first?.unwrapped ?? .emptyVardict
    }

    /// A property of Lectern's own object (/org/lectern/Lectern1), unwrapped.
    func lecternProperty(_ interface: String, _ name: String, timeout: Duration = .seconds(10)) async throws -> DBusValue {
        try await call(Self.busName, "/org/lectern/Lectern1", "org.freedesktop.DBus.Properties", "Get",
                       [.string(interface), .string(name)], timeout: timeout).first?.unwrapped ?? .emptyVardict
    }

    func playerProperties() async throws -> [String: DBusValue] {
        try await call(Self.busName, Self.mprisPath, "org.freedesktop.DBus.Properties", "GetAll",
                       [.string(Self.playerInterface)]).first?.stringKeyedDictionary ?? [:]
    }

    func setPlayerProperty(_ name: String, _ value: DBusValue) async throws {
        try await call(Self.busName, Self.mprisPath, "org.freedesktop.DBus.Properties", "Set",
                       [.string(Self.playerInterface), .string(name), .variant(value)])
    }

    @discardableResult
    func library(_ method: String, _ arguments: [DBusValue] = [], interface: String = "org.lectern.Library1") async throws -> [DBusValue] {
        try await call(Self.busName, "/org/lectern/Lectern1", interface, method, arguments)
    }

    @discardableResult
    func call(_ destination: String, _ path: String, _ interface: String, _ member: String,
                      _ arguments: [DBusValue], timeout: Duration = .seconds(10)) async throws -> [DBusValue] {
        do {
            return try await connection.call(destination, path: path, interface: interface, member: member, arguments,
                                             timeout: timeout)
        } catch let error as BusError {
            if error.name == "org.freedesktop.DBus.Error.ServiceUnknown" || error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                throw CLIError("lecternd is not running on this bus (start it with `make run` or `lecternd`)", unreachable: true)
            }
            if error.name == "org.freedesktop.DBus.Error.NoReply" || error.name == "org.freedesktop.DBus.Error.Disconnected" {
                throw CLIError("lecternd did not answer: \(error.message.isEmpty ? error.name : error.message)", unreachable: true)
            }
            throw CLIError(error.message.isEmpty ? error.name : error.message)
        }
    }
}

// MARK: - Formatting

enum Seconds {
    /// "90", "+30", "-15", "1.5", "1:30", "1:02:03" → microseconds.
    static func parse(_ text: String) -> Int64? {
        var body = Substring(text)
        var sign: Double = 1
        if body.first == "+" { body = body.dropFirst() } else if body.first == "-" { sign = -1; body = body.dropFirst() }
        let parts = body.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for part in parts {
            guard let value = Double(part), value.isFinite, value >= 0 else { return nil }
            total = total * 60 + value
        }
        let microseconds = sign * total * 1_000_000
        guard microseconds.magnitude < 9e18 else { return nil }
        return Int64(microseconds.rounded())
    }

    static func format(_ microseconds: Int64) -> String {
        let total = max(0, microseconds / 1_000_000)
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }
}

struct StatusReport {
    let status: String
    let title: String?
    let artists: [String]
    let album: String?
    let position: Int64
    let length: Int64?
    let volume: Double
    let rate: Double
    let loop: String
    let shuffle: Bool
    let url: String?
    /// org.lectern.Player1's GetStatus: the book, file and chapter figures.
    let book: [String: DBusValue]
    /// org.lectern.Library1's OfflineBooks and MissingFiles.
    var offlineBooks = 0, missingFiles = 0

    init(_ p: [String: DBusValue], book: [String: DBusValue] = [:]) {
        self.book = book
        let metadata = p["Metadata"]?.stringKeyedDictionary ?? [:]
        status = p["PlaybackStatus"]?.string ?? "Stopped"
        title = metadata["xesam:title"]?.string
        artists = metadata["xesam:artist"]?.stringArray ?? []
        album = metadata["xesam:album"]?.string
        position = p["Position"]?.int64 ?? 0
        length = metadata["mpris:length"]?.int64
        volume = p["Volume"]?.double ?? 1
        rate = p["Rate"]?.double ?? 1
        loop = p["LoopStatus"]?.string ?? "None"
        shuffle = p["Shuffle"]?.bool ?? false
        url = metadata["xesam:url"]?.string
    }

    /// What the daemon says now: MPRIS's Player properties and org.lectern.Player1's GetStatus.
    static func fetch(from daemon: Daemon) async throws -> StatusReport {
        var report = StatusReport(try await daemon.playerProperties(), book: try await daemon.listeningStatus())
        report.offlineBooks = Int(try await daemon.lecternProperty("org.lectern.Library1", "OfflineBooks").int64 ?? 0)
        report.missingFiles = Int(try await daemon.lecternProperty("org.lectern.Library1", "MissingFiles").int64 ?? 0)
        return report
    }

    /// "library: 2 books offline, 1 file missing"; nil when every book is there.
    var libraryLine: String? {
        let parts = [(offlineBooks, "book", "offline"), (missingFiles, "file", "missing")].filter { $0.0 > 0 }
            .map { count, noun, state in "\(count) \(noun)\(count == 1 ? "" : "s") \(state)" }
        return parts.isEmpty ? nil : "library: " + parts.joined(separator: ", ")
    }

    /// One line for a live view: the status, title and author, the position (as given: it moves while playing) and
    /// the chapter.
    func line(position: Int64) -> String {
        guard let title else { return "\(status): nothing loaded" }
        var parts = ["\(status): \(title)"]
        if let author = artists.first { parts[0] += " — \(author)" }
        parts.append("\(Seconds.format(position)) / \(length.map(Seconds.format) ?? "?")")
        if let chapter = book["chapter"]?.int64, let chapters = book["chapters"]?.int64 {
            parts.append("chapter \(chapter + 1)/\(chapters)")
        }
        if rate != 1 { parts.append(String(format: "%.2gx", rate)) }
        if let sleep = Self.sleepLine(book) { parts.append(sleep) }
        return parts.joined(separator: "  ")
    }

    var text: String {
        guard let title else { return (["\(status): nothing loaded"] + [libraryLine].compactMap { $0 }).joined(separator: "\n") }
        var lines = ["\(status): \(title)"]
        let by = [artists.joined(separator: ", "), album ?? ""].filter { !$0.isEmpty }.joined(separator: " — ")
        if !by.isEmpty { lines.append("  \(by)") }
        lines.append("  \(Seconds.format(position)) / \(length.map(Seconds.format) ?? "?")"
                     + String(format: "  volume %.2f  speed %.2gx  loop %@  shuffle %@", volume, rate, loop, shuffle ? "on" : "off"))
        if let file = book["file"]?.int64, let files = book["files"]?.int64 {
            lines.append("  file \(file + 1)/\(files)  \(clock("filePosition")) / \(clock("fileLength"))")
        }
        if let chapter = book["chapter"]?.int64, let chapters = book["chapters"]?.int64 {
            lines.append("  chapter \(chapter + 1)/\(chapters) “\(book["chapterTitle"]?.string ?? "")”  \(clock("chapterPosition")) / \(clock("chapterLength"))"
                         + (book["chapterRemaining"] == nil ? "" : "  \(clock("chapterRemaining")) left"))
        }
        if book["bookLength"] != nil {
            lines.append("  book \(clock("bookPosition")) / \(clock("bookLength"))  \(clock("remaining")) left"
                         + (rate == 1 ? "" : String(format: " at %.2gx", rate)))
        }
        if let sleep = Self.sleepLine(book) { lines.append("  " + sleep) }
        if let library = libraryLine { lines.append(library) }
        return lines.joined(separator: "\n")
    }

    private func clock(_ key: String) -> String { book[key]?.int64.map(Seconds.format) ?? "?" }

    /// "sleep in 12:00" / "sleep at the end of the chapter (3:10)"; nil without a timer.
    static func sleepLine(_ book: [String: DBusValue]) -> String? {
        let left = book["sleepTimeLeft"]?.int64.map(Seconds.format)
        switch book["sleep"]?.string {
        case "time"?: return "sleep in \(left ?? "?")"
        case "chapter"?: return "sleep at the end of the chapter" + (left.map { " (\($0))" } ?? "")
        default: return nil
        }
    }

    var json: String {
        var object: [String: Any] = [
            "status": status, "position": Double(position) / 1e6, "volume": volume, "rate": rate,
            "loop": loop, "shuffle": shuffle, "artists": artists, "offlineBooks": offlineBooks, "missingFiles": missingFiles,
        ]
        object["title"] = title
        object["album"] = album
        object["duration"] = length.map { Double($0) / 1e6 }
        object["url"] = url
        // The book's figures under "book": numbers from 1, times in seconds.
        var figures: [String: Any] = [:]
        for (key, value) in book {
            switch value.unwrapped {
            case .int64(let v): figures[key] = key == "book" ? Double(v) : Double(v) / 1e6
            case .int32(let v): figures[key] = Int(v) + (["file", "chapter"].contains(key) ? 1 : 0)
            case .double(let v): figures[key] = v
            case .string(let v): figures[key] = v
            default: break
            }
        }
        if !figures.isEmpty { object["book"] = figures }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// A command's examples, as its `--help` shows them.
func examples(_ lines: String...) -> String {
    "Examples:\n" + lines.map { "  " + $0 }.joined(separator: "\n")
}
