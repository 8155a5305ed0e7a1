"""A customer-support helpdesk (tickets and a knowledge base) run as a LangChain agent under the callback handler.

``env.Helpdesk`` holds the state and the tools, ``agents`` builds the five agents of known quality (each a
``create_agent`` graph whose chat model replays the shared scripted agent, with chaoskit attached through
``chaoskit_langchain.ChaosCallbackHandler``), ``verify`` holds the end-state oracles and ``scenarios/`` the
battery, with ``expected.yaml`` saying which agent should pass which scenario and why.
"""
