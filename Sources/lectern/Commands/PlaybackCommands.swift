import ArgumentParser
import Foundation
import LecternClient

// Playing: open, status, the transport (play, pause, toggle, stop, next, previous), seek, position, volume; and
// activate, what the desktop entry runs. Through MPRIS (and Library1's ActivateBook for `play BOOK`).

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a file, a folder of audio files, a file:// URI, or an http(s) stream (not a book: the book waits).",
        discussion: examples("lectern open ~/Audiobooks/Dune", "lectern open part1.mp3", "lectern open file:///music/song.ogg",
                             "lectern open http://radio.example/live.ogg"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "A path, a file:// URI, or an http:// or https:// URL.") var target: String

    func run() async throws {
        try await bus.connect().openURI(Parse.uri(target))
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
        try await bus.connect().activateApplication(opening: targets.map(Parse.uri))
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
        let client = try await bus.connect()
        if follow { return try await StatusFollower(client: client, json: json).run() }
        let report = try await StatusReport.fetch(from: client)
        print(json ? report.json : report.text)
    }
}

extension StatusReport {
    /// What lecternd says now: MPRIS's Player properties, org.lectern.Player1's GetStatus, and Library1's figures.
    static func fetch(from client: LecternClient) async throws -> StatusReport {
        var report = StatusReport(player: try await client.playerStatus(), book: try await client.listeningStatus())
        report.offlineBooks = Int(try await client.offlineBooks())
        report.missingFiles = Int(try await client.missingFiles())
        return report
    }
}

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play (resumes where it was paused), or play a book of the library, where it was left.",
        discussion: examples("lectern play", "lectern play Dune", "lectern play 12"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "A book: its id or (part of) its title.") var book: String?

    func run() async throws {
        let client = try await bus.connect()
        guard let book else {
            try await client.player(.play)
            return
        }
        try await client.activateBook(try await client.resolveBook(book), play: true)
    }
}

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Pause.",
        discussion: examples("lectern pause"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await bus.connect().player(.pause) }
}

struct Toggle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play if paused, pause if playing.",
        discussion: examples("lectern toggle"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await bus.connect().player(.playPause) }
}

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop.",
        discussion: examples("lectern stop"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await bus.connect().player(.stop) }
}

struct Next: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to the next track.",
        discussion: examples("lectern next"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await bus.connect().player(.next) }
}

struct Previous: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to the previous track.",
        discussion: examples("lectern previous"))
    @OptionGroup var bus: BusOptions
    func run() async throws { try await bus.connect().player(.previous) }
}

struct Seek: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move by a number of seconds: +30 or -15.",
        discussion: examples("lectern seek +30", "lectern seek -15"))
    @OptionGroup var bus: BusOptions
    // Passthrough, so that "-15" is taken as a number rather than an option.
    @Argument(parsing: .captureForPassthrough, help: "Seconds, with a sign: +30, -15.") var offset: [String] = []

    func run() async throws {
        let offset = self.offset.filter { $0 != "--" }
        guard offset.count == 1, let microseconds = Parse.offset(offset[0]) else {
            throw ValidationError("seek takes one signed number of seconds, e.g. +30 or -15")
        }
        try await bus.connect().seek(by: microseconds)
    }
}

struct Position: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Go to a position in the current track, in seconds (or m:ss).",
        discussion: examples("lectern position 90", "lectern position 1:30"))
    @OptionGroup var bus: BusOptions
    @Argument(help: "Seconds from the start of the track, e.g. 90 or 1:30.") var position: String

    func run() async throws {
        guard let microseconds = Parse.position(position) else {
            throw ValidationError("position takes a number of seconds (or m:ss) from the start, e.g. 90 or 1:30")
        }
        let client = try await bus.connect()
        let track = try await client.track()
        guard let id = track.id else {
            throw CLIError("nothing is playing")
        }
        if let length = track.length, microseconds > length {
            throw CLIError("the track is only \(Clock.format(length)) long")
        }
        try await client.setPosition(track: id, microseconds)
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
            print(String(format: "%.2f", try await bus.connect().volume()))
            return
        }
        guard let volume = Parse.volume(text) else {
            throw ValidationError("the volume is a number from 0 (silent) to 10, 1 being full volume, or 0% to 1000%; not \(text)")
        }
        try await bus.connect().setVolume(volume)
    }
}
