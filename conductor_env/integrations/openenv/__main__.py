"""``python -m conductor_env.integrations.openenv``: serves a Conductor env (see :func:`.server.main`)."""

from conductor_env.integrations.openenv.server import main

if __name__ == "__main__":
    main()
