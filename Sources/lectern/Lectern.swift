import ArgumentParser
import Foundation
import LecternClient
import LecternVersion

/// `lectern`: the command-line client. Everything goes through the daemon's D-Bus API, by ``LecternClient``.
///
/// Here: this root command, its exit statuses and its options; `Commands/`, what each command does, a file a topic;
/// `Arguments/`, reading what was typed (times, durations, volumes, paths, books and shelves by name); `Output/`,
/// what is printed (text, JSON, CSV); `Files/`, the bookmark files `bookmark export` writes and `bookmark import`
/// reads.
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
                      Import.self, ShelfCommand.self, BookCommand.self, SeriesCommand.self, BookmarkCommand.self, Find.self, ConfigCommand.self,
                      Activate.self,
                      Undo.self, HistoryCommand.self, Stats.self, CastCommand.self])

    /// As ArgumentParser's, with a status of our own for each kind of ``CLIError`` and ``ClientError``.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch let error as CLIError {
            fail(error.description, status: error.status)
        } catch let error as ClientError {
            fail(error.description, status: error.kind == .unreachable ? CLIError.unreachable : CLIError.refused)
        } catch {
            exit(withError: error)
        }
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
        Foundation.exit(status)
    }
}

struct BusOptions: ParsableArguments {
    @Option(help: "D-Bus address of the bus lecternd is on (default: the session bus).")
    var busAddress: String?

    /// lecternd on that bus, started if need be.
    func connect() async throws -> LecternClient { try await LecternClient.connect(busAddress: busAddress) }
}

/// A failure the user should read, and the exit status it ends with (see `lectern --help`); lecternd's own are
/// ``ClientError``s.
struct CLIError: Error, CustomStringConvertible {
    /// Something was refused or not found.
    static let refused: Int32 = 1
    /// EX_UNAVAILABLE: the bus or lecternd cannot be reached.
    static let unreachable: Int32 = 69

    let description: String
    let status: Int32
    init(_ description: String, unreachable: Bool = false) {
        self.description = description
        status = unreachable ? Self.unreachable : Self.refused
    }
}

/// A command's examples, as its `--help` shows them.
func examples(_ lines: String...) -> String {
    "Examples:\n" + lines.map { "  " + $0 }.joined(separator: "\n")
}
