import ArgumentParser
import Foundation
import LecternClient

/// `lectern cast`: the home network's renderers (network speakers, receivers, TVs) Lectern can play to.
struct CastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cast",
        abstract: "The renderers on the home network (lecternd with network: true).",
        discussion: examples("lectern cast list", "lectern cast list --json"),
        subcommands: [CastList.self])
}

/// `lectern cast list`: the renderers found; on a daemon that has just joined the network, waits a little for them.
struct CastList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list",
        abstract: "List the renderers on the home network.",
        discussion: examples("lectern cast list", "lectern cast list --wait 10", "lectern cast list --json")
            + "\n\nRenderers answer within a few seconds of lecternd joining the network; with none found yet, the list"
            + " waits up to --wait seconds for one.")
    @OptionGroup var bus: BusOptions
    @Option(help: "Seconds to wait for a first renderer when none is found yet (default 3).") var wait: Double = 3
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let client = try await bus.connect()
        let network = try await client.network()
        guard network.on else { throw CLIError("lecternd is not on the home network: \(network.problem)") }
        var renderers = try await client.renderers()
        let deadline = ContinuousClock.now + .seconds(max(0, min(wait, 60)))
        while renderers.isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            renderers = try await client.renderers()
        }
        if json {
            print(JSON.encode(renderers.map {
                ["name": $0.name, "udn": $0.udn, "address": $0.address, "interface": $0.interface] as [String: Any]
            }))
        } else if renderers.isEmpty {
            print("no renderers found")
        } else {
            for renderer in renderers { print("\(renderer.name)  \(renderer.address)  (\(renderer.interface), \(renderer.udn))") }
        }
    }
}
