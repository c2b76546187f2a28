"""Policy backends: each module registers one factory in `repogym.agent.policies.policy_backends`."""
