import Foundation
import LecternClient

/// `lectern status --follow`: the status again at every change the daemon signals (its properties, a seek), never
/// by asking it on a timer. On a terminal, one line that redraws, its position moved on locally once a second while
/// playing; otherwise (or with --json) a line per change. Ends when the daemon goes away.
struct StatusFollower {
    let client: LecternClient
    let json: Bool

    private enum Event { case changed, tick }

    func run() async throws {
        let changes = try await client.statusChanges()
        let terminal = !json && isatty(STDOUT_FILENO) != 0
        let (events, sink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(16))
        let listener = Task {
            for await _ in changes {
                sink.yield(.changed)
            }
            sink.finish()
        }
        let ticker = Task {
            while terminal && !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                sink.yield(.tick)
            }
        }
        defer {
            listener.cancel()
            ticker.cancel()
        }

        var report = try await StatusReport.fetch(from: client)
        var fetchedAt = ContinuousClock.now
        var shown = ""
        func show(_ text: String) {
            guard text != shown else { return }
            shown = text
            FileHandle.standardOutput.write(Data((terminal ? "\r\u{1B}[2K\(text)" : text + "\n").utf8))
        }
        func current() -> String {
            guard !json else { return report.json }
            var position = report.position
            if report.status == "Playing" {
                position += Int64((ContinuousClock.now - fetchedAt) / .microseconds(1) * report.rate)
                if let length = report.length { position = min(position, length) }
            }
            return report.line(position: position)
        }
        show(current())
        for await event in events {
            if event == .changed {
                do {
                    report = try await StatusReport.fetch(from: client)
                } catch let error as ClientError where error.kind == .unreachable {
                    break
                }
                fetchedAt = .now
            }
            show(current())
        }
        if terminal { FileHandle.standardOutput.write(Data("\n".utf8)) }
        throw CLIError("lecternd went away", unreachable: true)
    }
}
