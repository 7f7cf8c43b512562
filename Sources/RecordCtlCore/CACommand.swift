import ArgumentParser
import Foundation
import NIOSSL
import RecordingTLS

/// `recordctl ca …`: a small certificate authority for a recording deployment.
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Create the recording CA and issue or revoke server and agent certificates.",
        subcommands: [Init.self, Issue.self, Revoke.self]
    )

    struct Location: ParsableArguments {
        @Option(name: .customLong("ca-dir"), help: "Directory holding ca.pem, ca-key.pem and revoked.json (default $RECORDCTL_CA_DIR or ./ca).")
        var directory: String?

        var resolved: String { directory ?? ProcessInfo.processInfo.environment["RECORDCTL_CA_DIR"] ?? "ca" }

        func load() throws -> CertificateAuthority {
            do { return try CertificateAuthority.load(from: resolved) } catch {
                throw ValidationError("cannot load the CA from \(resolved): \(error) (create one with `recordctl ca init`)")
            }
        }
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a new CA (P-256, 10 years); its key is written 0600.")
        @OptionGroup var location: Location
        @Option(help: "The CA's common name.") var name = "Recording CA"

        func run() throws {
            let dir = location.resolved
            guard !FileManager.default.fileExists(atPath: dir + "/" + CertificateAuthority.privateKeyFileName) else {
                throw ValidationError("\(dir) already holds a CA; refusing to overwrite it")
            }
            let ca = try CertificateAuthority.create(commonName: name)
            try ca.write(to: dir)
            print("created CA \"\(name)\" in \(dir) (ca.pem, ca-key.pem 0600)")
        }
    }

    struct Issue: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a server or agent certificate signed by the CA.",
            subcommands: [Server.self, Agent.self]
        )

        struct Server: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Issue a server certificate (TLS serverAuth) for the given names.")
            @OptionGroup var location: Location
            @Option(name: .customLong("host"), help: "DNS name the agents connect to (repeatable).") var hosts: [String] = []
            @Option(name: .customLong("ip"), help: "IP address the agents connect to (repeatable).") var ips: [String] = []
            @Option(help: "Output prefix: writes PREFIX.pem and PREFIX-key.pem (default server).") var out = "server"
            @Option(help: "Validity in days (at least 1).") var days = 730
            @Flag(help: "Replace PREFIX.pem and PREFIX-key.pem if they exist.") var force = false

            func validate() throws { try Issue.checkDays(days) }

            func run() throws {
                guard !hosts.isEmpty || !ips.isEmpty else { throw ValidationError("give at least one --host or --ip") }
                try Issue.refuseOverwrite(prefix: out, force: force)
                let cert = try location.load().issueServerCertificate(hostnames: hosts, ipAddresses: ips, validity: Double(days) * 86400)
                try cert.write(certPath: out + ".pem", keyPath: out + "-key.pem")
                print("issued server certificate \(out).pem for \((hosts + ips).joined(separator: ", ")) (serial \(cert.serialNumber), key 0600)")
            }
        }

        struct Agent: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Issue an agent certificate (TLS clientAuth) naming the agent id.")
            @OptionGroup var location: Location
            @Argument(help: "The agent id ([A-Za-z0-9._-], 1…64).") var agentID: String
            @Option(help: "Output prefix: writes PREFIX.pem and PREFIX-key.pem (default: the agent id).") var out: String?
            @Option(help: "Validity in days (at least 1).") var days = 365
            @Flag(help: "Replace PREFIX.pem and PREFIX-key.pem if they exist.") var force = false

            func validate() throws { try Issue.checkDays(days) }

            func run() throws {
                let prefix = out ?? agentID
                try Issue.refuseOverwrite(prefix: prefix, force: force)
                let cert = try location.load().issueAgentCertificate(agentID: agentID, validity: Double(days) * 86400)
                try cert.write(certPath: prefix + ".pem", keyPath: prefix + "-key.pem")
                print("issued agent certificate \(prefix).pem for \(agentID) (serial \(cert.serialNumber), key 0600)")
            }
        }

        /// A certificate valid for less than a day would be expired, or nearly, when it arrives.
        static func checkDays(_ days: Int) throws {
            guard (1...36_500).contains(days) else {
                throw ValidationError("--days must be from 1 to 36500 (got \(days)); a certificate for 0 days is expired when issued")
            }
        }

        /// Never replace a certificate and key silently: the old key may be in use on a host.
        static func refuseOverwrite(prefix: String, force: Bool) throws {
            let existing = [prefix + ".pem", prefix + "-key.pem"].filter { FileManager.default.fileExists(atPath: $0) }
            guard existing.isEmpty || force else {
                throw CLIFailure(.failed, "\(existing.joined(separator: " and ")) already exist\(existing.count == 1 ? "s" : ""); "
                                 + "choose another --out, or pass --force to replace them")
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke an agent certificate: the server refuses it once it reloads revoked.json (restart it).")
        @OptionGroup var location: Location
        @Argument(help: "The agent certificate (PEM) to revoke.") var certificate: String

        func run() throws {
            let certs = try NIOSSLCertificate.fromPEMFile(certificate)
            guard let cert = certs.first else { throw ValidationError("\(certificate) holds no certificate") }
            let agent = (try? PeerIdentity.agentID(from: cert)) ?? "unknown"
            let serial = PeerIdentity.serialNumber(of: cert)
            let path = location.resolved + "/" + RevocationList.fileName
            var list = try RevocationList.load(path: path)
            try list.revoke(serial: serial, agentID: agent)
            try list.save(path: path)
            print("revoked \(agent) (serial \(serial)) in \(path); copy it to the server's tls.revocationList (re-read on change, no restart)")
        }
    }
}
