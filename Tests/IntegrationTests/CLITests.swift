import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Desktop {
    /// The `lectern` command-line client against a real daemon.
    @Suite struct CLI {
        @Test func withoutADaemonCommandsSayItIsNotRunning() async throws {
            let bus = try PrivateBus()
            defer { bus.stop() }
            for command in [["status"], ["status", "--json"], ["pause"], ["volume"], ["open", "/tmp"]] {
                let result = try await DaemonFixture.runLectern(command, environment: bus.environment)
                #expect(result.status == 69, "lectern \(command.joined(separator: " ")): 69, unreachable: \(result.status)")
                #expect(result.stderr.contains("not running"), "lectern \(command.joined(separator: " ")): \(result.stderr)")
                for crash in ["Fatal error", "Stack dump", "backtrace", "Segmentation"] {
                    #expect(!result.stderr.contains(crash), "lectern \(command.joined(separator: " ")): \(result.stderr)")
                }
                #expect(result.stderr.split(separator: "\n").count <= 3, "a short message, not a trace: \(result.stderr)")
            }
        }

        @Test func everyCommandHasAnAbstractAndExamples() async throws {
            let dump = try await Subprocess.run(builtExecutable("lectern").path, ["--experimental-dump-help"])
            try #require(dump.status == 0, "\(dump.stderr)")
            let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
            var commands: [(path: String, info: [String: Any])] = []
            func walk(_ command: [String: Any], _ path: String) {
                let name = command["commandName"] as? String ?? "?"
                guard name != "help" else { return }
                let full = path.isEmpty ? name : path + " " + name
                commands.append((full, command))
                for sub in command["subcommands"] as? [[String: Any]] ?? [] { walk(sub, full) }
            }
            walk(try #require(root["command"] as? [String: Any]), "")
            #expect(commands.count > 35, "\(commands.map(\.path))")
            for (path, info) in commands {
                let abstract = info["abstract"] as? String ?? ""
                #expect(!abstract.isEmpty && !abstract.contains("\n"), "\(path): a one-line abstract")
                let discussion = info["discussion"] as? String ?? ""
                #expect(discussion.contains("Examples:\n  \(path)"), "\(path): examples of itself in --help")
                for argument in info["arguments"] as? [[String: Any]] ?? [] {
                    let names = (argument["names"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
                    guard !names.contains("help"), !names.contains("version") else { continue }
                    #expect(!(argument["abstract"] as? String ?? "").isEmpty, "\(path): \(names) has no help")
                }
            }
        }

        @Test func statusFollowSaysEachChangeAsItHappensAndNothingBetween() async throws {
            try await DaemonFixture.with { d in
                #expect(try await d.lectern("open", d.media.mp3Book.path).status == 0)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // Past the start: an output that started late is told with a Seeked (a line of its own) in its first
                // second, which is not what this test is about.
                _ = try await d.waitForPosition(atLeast: 1_500_000)
                let follow = try Subprocess(builtExecutable("lectern").path, ["status", "--follow", "--json"],
                                            environment: d.environment)
                defer { follow.kill() }
                func next(_ timeout: Duration = .seconds(5)) async throws -> [String: Any]? {
                    guard let line = await follow.readLine(timeout: timeout) else { return nil }
                    return try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                }
                #expect(try await next()?["status"] as? String == "Playing", "the status at once")
                #expect(try await d.lectern("pause").status == 0)
                #expect(try await next()?["status"] as? String == "Paused", "the pause, as it happens")
                #expect(await follow.readLine(timeout: .milliseconds(1500)) == nil, "nothing changed, nothing said")
                #expect(try await d.lectern("position", "5").status == 0)
                let moved = try await next()
                #expect((moved?["position"] as? Double).map { abs($0 - 5) < 0.3 } == true, "the seek: \(String(describing: moved))")
            }
        }

        @Test func statusFollowRedrawsOneLineOnATerminal() async throws {
            try await DaemonFixture.with { d in
                #expect(try await d.lectern("open", d.media.mp3Book.path).status == 0)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // `script` gives lectern a pseudo-terminal, as a shell would.
                let command = "\(builtExecutable("lectern").path) status --follow"
                let terminal = try Subprocess("script", ["-qfec", command, "/dev/null"], environment: d.environment,
                                              newProcessGroup: true)
                defer { terminal.kill() }
                let playing = await terminal.readAll(timeout: .milliseconds(2500))
                let redraws = playing.components(separatedBy: "\r\u{1B}[2K").dropFirst()
                #expect(redraws.count >= 2 && redraws.allSatisfy { $0.hasPrefix("Playing: ") }, "\(playing.debugDescription)")
                #expect(Set(redraws).count >= 2, "the position moves on while playing: \(playing.debugDescription)")
                #expect(!playing.contains("\n"), "one line, redrawn")
                #expect(try await d.lectern("pause").status == 0)
                let paused = await terminal.readAll(timeout: .seconds(2))
                #expect(paused.contains("\r\u{1B}[2KPaused: "), "\(paused.debugDescription)")
            }
        }

        @Test func bothProgramsSayTheirVersionTheSameWay() async throws {
            let client = try await Subprocess.run(builtExecutable("lectern").path, ["--version"])
            let daemon = try await Subprocess.run(builtExecutable("lecternd").path, ["--version"])
            #expect(client.status == 0 && daemon.status == 0, "\(client) \(daemon)")
            let version = client.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(version.split(separator: ".").count == 3 && version.allSatisfy { $0.isNumber || $0 == "." }, "\(version)")
            #expect(daemon.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == version)
        }

        @Test func refusalsCountFilesAndChaptersFromOneAndNegativeVolumesAreRefused() async throws {
            try await DaemonFixture.with { d in
                #expect(try await d.lectern("open", d.media.mp3Book.path).status == 0)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                var r = try await d.lectern("jump", "99", "0")
                #expect(r.status == 1 && r.stderr.contains("there is no file 99"), "lectern jump 99 0, refused: \(r)")
                r = try await d.lectern("chapter", "77")
                #expect(r.status == 1 && r.stderr.contains("there is no chapter 77"), "lectern chapter 77, refused: \(r)")
                r = try await d.lectern("volume", "-1")
                #expect(r.status == 64 && r.stderr.contains("the volume is a number from 0"), "lectern volume -1, usage: \(r)")
                #expect(try await d.lectern("volume").stdout == "1.00", "nothing changed")
                r = try await d.lectern("volume", "0.5")
                #expect(r.status == 0, "\(r)")
                #expect(try await d.lectern("volume").stdout == "0.50")
            }
        }

        @Test func commandsDriveTheDaemon() async throws {
            try await DaemonFixture.with { d in
                var r = try await d.lectern("status")
                #expect(r.status == 0 && r.stdout.contains("Stopped"), "lectern status with nothing loaded: \(r)")
                r = try await d.lectern("status", "--json")
                let empty = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
                #expect(empty?["status"] as? String == "Stopped", "\(r.stdout)")

                r = try await d.lectern("open", d.media.mp3Book.path)
                #expect(r.status == 0, "lectern open: \(r)")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.waitForURL(endingWith: "/mp3book/01.mp3")?.hasSuffix("/mp3book/01.mp3") == true)

                r = try await d.lectern("status")
                #expect(r.status == 0)
                #expect(r.stdout.contains("Chapter One"), "lectern status:\n\(r.stdout)")
                #expect(r.stdout.contains("Playing"), "lectern status:\n\(r.stdout)")

                r = try await d.lectern("status", "--json")
                #expect(r.status == 0)
                let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
                #expect(json?["status"] as? String == "Playing", "\(r.stdout)")
                #expect(json?["title"] as? String == "Chapter One", "\(r.stdout)")
                #expect((json?["position"] as? Double).map { $0 >= 0 && $0 < 20 } == true, "\(r.stdout)")
                #expect((json?["duration"] as? Double).map { abs($0 - 20) < 0.5 } == true, "\(r.stdout)")

                #expect(try await d.lectern("pause").status == 0)
                #expect(try await d.waitForStatus("Paused") == "Paused")
                #expect(try await d.lectern("toggle").status == 0)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.lectern("toggle").status == 0)
                #expect(try await d.waitForStatus("Paused") == "Paused")
                #expect(try await d.lectern("status").stdout.contains("Paused"))

                var mark = d.signals.mark
                #expect(try await d.lectern("position", "2").status == 0)
                #expect(await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition == 2_000_000)
                #expect(near(try await d.position(), 2_000_000, within: 250_000))

                mark = d.signals.mark
                r = try await d.lectern("seek", "+1")
                #expect(r.status == 0, "lectern seek +1: \(r)")
                #expect(near(await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition, 3_000_000, within: 250_000))
                #expect(near(try await d.position(), 3_000_000, within: 250_000))
                mark = d.signals.mark
                r = try await d.lectern("seek", "-1")
                #expect(r.status == 0, "lectern seek -1: \(r)")
                #expect(near(await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition, 2_000_000, within: 250_000))
                #expect(near(try await d.position(), 2_000_000, within: 250_000))

                #expect(try await d.lectern("volume", "0.5").status == 0)
                #expect(try await d.get("Volume") == .double(0.5))
                r = try await d.lectern("volume")
                #expect(r.stdout == "0.50", "lectern volume: \(r)")

                #expect(try await d.lectern("next").status == 0)
                #expect(try await d.waitForURL(endingWith: "/mp3book/02.mp3")?.hasSuffix("/mp3book/02.mp3") == true)
                #expect(try await d.status() == "Paused")
                // Its tags were read in the background after the folder was opened.
                #expect(try await d.waitForProperty("Metadata") {
                    $0.stringKeyedDictionary?["xesam:title"] == .string("Chapter Two")
                }.stringKeyedDictionary?["xesam:title"] == .string("Chapter Two"))
                #expect(try await d.lectern("status").stdout.contains("Chapter Two"))

                #expect(try await d.lectern("stop").status == 0)
                #expect(try await d.waitForStatus("Stopped") == "Stopped")
                #expect(try await d.lectern("status").stdout.contains("Stopped"))
            }
        }

        @Test func badArgumentsFailWithoutTouchingPlayback() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.mp3Book)
                let mark = d.signals.mark
                for command in [["seek", "5"], ["seek", "+abc"], ["position", "999"], ["position", "abc"],
                                ["volume", "nan"], ["open", d.directory.appending("missing").path]] {
                    let r = try await DaemonFixture.runLectern(command, environment: d.environment)
                    #expect(r.status != 0, "lectern \(command.joined(separator: " ")) exited 0")
                    #expect(!r.stderr.isEmpty, "lectern \(command.joined(separator: " ")) says nothing")
                    #expect(!r.stderr.contains("Fatal error"), "\(r.stderr)")
                }
                try await d.signals.barrier()
                #expect(d.signals.seeked(since: mark).isEmpty)
                for property in ["PlaybackStatus", "Volume", "Rate"] {
                    #expect(d.signals.values(of: property, since: mark).isEmpty, "\(property) changed")
                }
                #expect(try await d.currentURL()?.hasSuffix("/mp3book/01.mp3") == true)
                #expect(try await d.status() == "Paused")
            }
        }
    }
}
