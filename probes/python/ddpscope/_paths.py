"""Where ddpscope's shared libraries are: named by an environment variable, else beside
a built source tree (probes/python -> build/lib) or an installed one
(share/ddpscope/python -> lib)."""
import os


def library_path(name, env_var):
    """The path of library `name`; None when neither the variable nor a tree has it."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "..", "..", "..", "build", "lib", name),
                      os.path.join(here, "..", "..", "..", "..", "lib", name)):
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    return None
